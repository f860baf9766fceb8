"""The Markdown report of a run: every reproduced number beside the paper's, with the difference.

Paper values come from resources/paper/fairness.yaml. A value's ``measure`` names how the run
computes it (see :data:`MEASURES`); its model/dataset scope uses registry ids, ``pooled`` meaning
over every setting of the run. Verdicts:
    match / differs   - the run has that model (and, for pooled values, exactly the paper's models);
                        "=" values compare |difference| to the tolerance, bounds check the relation;
    different model   - the run's model is not the paper's (the run's model on the same dataset is shown);
    not run           - the dataset is not part of the run;
    not finite        - the run's number is infinite (never a match).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable

import pandas as pd

from thinkbias.report.markdown import format_cell, markdown_table

Tables = dict[str, pd.DataFrame]


def _row(t: pd.DataFrame, model: str, dataset: str) -> pd.Series | None:
    r = t[(t["model"] == model) & (t["dataset"] == dataset)]
    return r.iloc[0] if len(r) else None


def _settings(tables: Tables) -> pd.DataFrame:
    t = tables["table2"]
    return t[t["model"] != "pooled"]


def _count(tables: Tables, what: str) -> float:
    s = _settings(tables)
    f2 = tables["figure2"]
    if what == "c_gt_b":
        return float((s["c"] > s["b"]).sum())
    if what == "delta_dcf_pos":
        return float((f2["delta_dcf"] > 0).sum())
    if what == "abs_delta_dgroup_le_0.015":
        return float((f2["delta_dgroup"].abs() <= 0.015).sum())
    if what == "abs_delta_c_le_0.56":
        return float((tables["table5"]["delta_c_pct"].abs() <= 0.56).sum())
    if what == "probe_passes_K10":
        return float(2 * 10 * tables["parse_counts"]["pairs"].sum())
    raise KeyError(what)


def measure(tables: Tables, spec: str, model: str, dataset: str) -> float:
    """Compute one measure (``table.column``, ``table4.<from>.<column>``, ``count.<what>``,
    ``max.<column>``, ``maxrow.<from>.<column>``) for a model/dataset scope."""
    kind, _, rest = spec.partition(".")
    if kind == "count":
        return _count(tables, rest)
    if kind == "max":
        if rest == "abs_delta_dgroup":
            return float(tables["figure2"]["delta_dgroup"].abs().max())
        return float(_settings(tables)[rest].max())
    if kind == "maxrow":
        state, col = rest.split(".")
        t = tables["table4"]
        t = t[(t["model"] == model) & (t["from"] == state)]
        return float(t[col].max()) if len(t) else math.nan
    if kind == "table4":
        state, col = rest.split(".")
        t = tables["table4"]
        r = t[(t["model"] == model) & (t["dataset"] == dataset) & (t["from"] == state)]
        return float(r[col].iloc[0]) if len(r) else math.nan
    r = _row(tables[kind], model, dataset)
    return float(r[rest]) if r is not None else math.nan


def _paper_number(value: float) -> str:
    """A paper value as printed: integers without decimals."""
    return str(int(value)) if float(value).is_integer() else format_cell(float(value), 3)


def compare(tables: Tables, paper: dict, run_models: list[str], run_datasets: list[str]) -> pd.DataFrame:
    """One row per paper value: scope, paper value, reproduced value, difference, verdict."""
    paper_models = list(paper["models"])
    stand_in = sorted(run_models)[0] if run_models else ""
    same_models = set(run_models) == set(paper_models) and set(run_datasets) == set(paper["datasets"])
    rows = []
    for v in paper["values"]:
        model, dataset = v["model"], v["dataset"]
        shown_model = model
        if model == "pooled":
            verdict_basis = "ok" if same_models else "different model"
            shown_model = "pooled" if same_models else f"pooled ({', '.join(sorted(run_models))})"
            value = measure(tables, v["measure"], model, dataset)
        elif dataset != "pooled" and dataset not in run_datasets:
            verdict_basis, value = "not run", math.nan
        elif model in run_models:
            verdict_basis = "ok"
            value = measure(tables, v["measure"], model, dataset)
        else:
            verdict_basis = "different model"
            shown_model = f"{stand_in} (for {paper['models'].get(model, model)})"
            value = measure(tables, v["measure"], stand_in, dataset)
        rel = v.get("relation", "=")
        diff = value - v["value"] if rel == "=" and not math.isnan(value) else math.nan
        if verdict_basis != "ok":
            verdict = verdict_basis
        elif math.isnan(value):
            verdict = "missing"
        elif math.isinf(value):  # e.g. an underflowed log10 p: no bound can be checked on it
            verdict = "not finite"
        elif rel == "=":
            verdict = "match" if abs(diff) <= float(v.get("tolerance", 0)) else "differs"
        elif rel == "<=":
            verdict = "match" if value <= v["value"] else "differs"
        else:
            verdict = "match" if value >= v["value"] else "differs"
        rows.append({"id": v["id"], "quantity": v["quantity"], "model": shown_model, "dataset": dataset,
                     "paper": f"{'' if rel == '=' else rel + ' '}{_paper_number(v['value'])}",
                     "reproduced": value, "difference": diff, "verdict": verdict, "source": v["source"]})
    return pd.DataFrame(rows)


def render_report(run: str, tables: Tables, paper: dict, run_models: list[str], run_datasets: list[str],
                  cost: pd.DataFrame, wall: pd.DataFrame | None = None) -> str:
    """The whole Markdown report of a run."""
    cmp_table = compare(tables, paper, run_models, run_datasets)
    t2 = tables["table2"]
    lines = [f"# Fairness study: run `{run}`", "",
             f"Reproduction of {paper['paper']}. Models: {', '.join(sorted(run_models))}; "
             f"datasets: {', '.join(run_datasets)}.", ""]
    if not set(run_models) <= set(paper["models"]):
        lines += ["The run's model is not one of the paper's, so each paper value is shown beside this "
                  "model's number and the verdict reads *different model*.", ""]
    lines += ["## Parsing and retained pairs", "",
              "A pair is retained only if its Yes/No answer parses on both sides in both arms.", "",
              markdown_table(tables["parse_counts"], 0, missing="—"), "",
              "## Table 2: created vs resolved flips", "", markdown_table(t2, 3, missing="—"), "",
              "## Reproduced vs paper", "", markdown_table(cmp_table, 3, missing="—"), "",
              "## Probing cost", "",
              "Generated tokens of both arms against the tokens evaluated by the CDPG and nothink probes "
              "(evaluated: run on the KV state each generation left, 0 for cached results; reused: what a "
              "separate probe job sharing each prefix across cuts would evaluate; naive: each prefix re-fed "
              "from scratch).", "",
              markdown_table(cost, 3, missing="—"), ""]
    if len(cost) and {"generated_tokens", "probe_tokens_reused", "probe_tokens_naive"} <= set(cost.columns):
        gen, reused, naive = (float(cost[c].sum()) for c in ("generated_tokens", "probe_tokens_reused",
                                                              "probe_tokens_naive"))
        fwd = gen + float(cost["prompt_tokens"].sum()) if "prompt_tokens" in cost.columns else math.nan
        if gen and "probe_tokens_evaluated" in cost.columns:
            ev = float(cost["probe_tokens_evaluated"].sum())
            lines += [f"Probing alongside generation evaluated {ev:,.0f} tokens: {ev / gen:.2f}x the generated "
                      f"tokens, {ev / fwd:.2f}x all forward tokens of generation.", ""]
        if gen:
            lines += [f"A separate probe job would evaluate {reused:,.0f} tokens with prefix reuse "
                      f"({naive:,.0f} if every prefix were re-fed) against {gen:,.0f} generated tokens: "
                      f"{reused / gen:.2f}x the generated tokens ({naive / gen:.2f}x naive), {reused / fwd:.2f}x "
                      f"all forward tokens of generation (prompt + generated).", ""]
    if wall is not None and len(wall):
        lines += ["## Wall time (Snakemake benchmarks)", "", markdown_table(wall, 1, missing="—"), ""]
    verdicts = cmp_table["verdict"].value_counts()
    lines += ["## Summary", "", ", ".join(f"{k}: {int(n)}" for k, n in verdicts.items()), ""]
    return "\n".join(lines)


def wall_time_summary(paths: list[str], root: str) -> pd.DataFrame:
    """Per step (the first folder under ``root``, e.g. generate, probe): jobs, wall seconds and CPU
    seconds summed over Snakemake benchmark TSVs."""
    rows = []
    for p in paths:
        try:
            b = pd.read_csv(p, sep="\t")
        except (OSError, pd.errors.EmptyDataError):
            continue
        rel = Path(p).resolve().relative_to(Path(root).resolve())
        cpu = float(b["cpu_time"].iloc[0]) if "cpu_time" in b.columns else math.nan
        rows.append({"step": rel.parts[0], "jobs": 1, "wall_s": float(b["s"].iloc[0]), "cpu_s": cpu})
    if not rows:
        return pd.DataFrame(columns=["step", "jobs", "wall_s", "cpu_s"])
    return pd.DataFrame(rows).groupby("step", as_index=False).sum()
