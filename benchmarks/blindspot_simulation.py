"""Statistical validation of the blindspot staged testing by simulation (no LLM).

Planted discordance for null concepts (effect 0) and concepts with known effects (2-6 percentage
points) runs, on the same simulated audits, through three procedures of thinkbias.blindspot:

- paper:      the staged procedure with the paper's efficacy rule (the spending value as threshold);
- exact:      the staged procedure with exact Lan-DeMets O'Brien-Fleming boundaries;
- exhaustive: one McNemar test per concept on every input at alpha / m.

Reports per procedure the family-wise false-positive rate with its 95% Clopper-Pearson interval
(goal <= 0.05), the power per effect size, and the share of target-model calls saved against
exhaustive testing (the paper reports about one third).

    .venv/bin/python benchmarks/blindspot_simulation.py --replicates 200 --jobs 2 --out results/blindspot/simulation

The defaults mirror the paper's loan task: 2,500 inputs in 10 clusters, stages of 20 * 2^s inputs per
cluster, 20 null concepts and one concept per effect in {2, 3, 4, 5, 6} pp, 15% discordant pairs.
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pandas as pd

from thinkbias.blindspot.report import table_markdown
from thinkbias.blindspot.simulation import (
    PROCEDURES,
    SimulationDesign,
    comparison_table,
    proportion_ci,
    run_replicates,
    summarise_procedures,
)
from thinkbias.blindspot.stages import StageParams
from thinkbias.plots.blindspot import simulation_figure


def _chunk(args: tuple) -> pd.DataFrame:
    design, n, seed, params, procedures, first = args
    return run_replicates(design, n, seed, params, procedures, first_replicate=first)


def run_parallel(
    design: SimulationDesign, n_replicates: int, seed: int, params: StageParams, procedures: tuple[str, ...], jobs: int
) -> pd.DataFrame:
    """Replicates split into ``jobs`` contiguous chunks run in separate processes; replicate r draws
    the same audit whatever the split."""
    jobs = max(1, min(jobs, n_replicates))
    sizes = [n_replicates // jobs + (i < n_replicates % jobs) for i in range(jobs)]
    starts = [sum(sizes[:i]) for i in range(jobs)]
    tasks = [(design, n, seed, params, procedures, first) for n, first in zip(sizes, starts)]
    if jobs == 1:
        return _chunk(tasks[0])
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return pd.concat(list(pool.map(_chunk, tasks)), ignore_index=True)


def power_table(reps: pd.DataFrame) -> pd.DataFrame:
    """Per procedure and planted effect: power with its 95% interval and the mean stage of the flag."""
    rows = []
    for (proc, effect), g in reps[reps["effect"] > 0].groupby(["procedure", "effect"], sort=False):
        lo, hi = proportion_ci(int(g["flagged"].sum()), len(g))
        rows.append(
            {
                "procedure": proc,
                "effect": effect,
                "power": float(g["flagged"].mean()),
                "power 95% low": lo,
                "power 95% high": hi,
                "mean_stage_flagged": float(g.loc[g["flagged"], "stage_flagged"].mean())
                if g["flagged"].any()
                else float("nan"),
            }
        )
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--replicates", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=2, help="worker processes")
    ap.add_argument("--seed", type=int, default=20260401)
    ap.add_argument("--n-inputs", type=int, default=2500)
    ap.add_argument("--n-clusters", type=int, default=10)
    ap.add_argument("--k0", type=int, default=20)
    ap.add_argument("--n-null", type=int, default=20)
    ap.add_argument("--effects", type=float, nargs="+", default=[0.02, 0.03, 0.04, 0.05, 0.06])
    ap.add_argument("--discordance", type=float, default=0.15)
    ap.add_argument("--n-simulations", type=int, default=50_000, help="Monte Carlo draws of the conditional power")
    ap.add_argument("--procedures", nargs="+", default=list(PROCEDURES), choices=list(PROCEDURES))
    ap.add_argument("--out", default="results/blindspot/simulation")
    ap.add_argument(
        "--tiny", action="store_true", help="2 replicates of a small audit, one process (benchmarks/README.md)"
    )
    args = ap.parse_args(argv)
    if args.tiny:
        args.replicates, args.jobs, args.n_inputs, args.n_null, args.n_simulations = 2, 1, 400, 3, 2_000
    design = SimulationDesign(
        n_inputs=args.n_inputs,
        n_clusters=args.n_clusters,
        k0=args.k0,
        n_null=args.n_null,
        effects=tuple(args.effects),
        discordance=args.discordance,
    )
    params = StageParams(n_simulations=args.n_simulations)
    procedures = tuple(args.procedures)
    start = time.monotonic()
    reps = run_parallel(design, args.replicates, args.seed, params, procedures, args.jobs)
    summaries = summarise_procedures(reps)
    seconds = round(time.monotonic() - start, 1)
    summary = {
        "procedures": summaries,
        "seconds": seconds,
        "jobs": args.jobs,
        "design": {k: (list(v) if isinstance(v, tuple) else v) for k, v in design.__dict__.items()},
        "n_simulations": args.n_simulations,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    reps.to_csv(out / "replicates.csv", index=False)
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    power = power_table(reps)
    power.to_csv(out / "power.csv", index=False)
    simulation_figure(power, str(out / "power.png"))
    comparison = comparison_table(summaries)
    comparison.to_csv(out / "comparison.csv", index=False)
    (out / "summary.md").write_text(
        f"# Staged testing by simulation ({args.replicates} replicates, {seconds} s with {args.jobs} processes)\n\n"
        "Family-wise false-positive rate (any of the null concepts flagged; goal <= 0.05) with its 95% "
        "Clopper-Pearson interval, power per planted effect, share of target calls saved against exhaustive "
        "testing (paper: about one third).\n\n" + table_markdown(comparison) + "\n" + table_markdown(power)
    )
    print(json.dumps(summary, indent=1))
    return summary


if __name__ == "__main__":
    main()
