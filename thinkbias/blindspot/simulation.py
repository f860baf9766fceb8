"""Validation of the staged testing by simulation: planted discordance, no LLM.

Each replicate draws paired decisions for a set of concepts with known effects (acceptance-rate
differences of 0 for null concepts and a few percentage points for the others), runs them through
exactly the staged procedure of :mod:`thinkbias.blindspot.stages`, and records which were flagged.
Across replicates this estimates the family-wise false-positive rate, the power per effect size and
the share of target-model calls saved against exhaustive testing.

Planting an effect ``delta`` with discordance rate ``d`` (share of pairs whose two decisions differ):
a pair is discordant with probability ``d``; a discordant pair is (x+ accept, x- reject) with
probability ``1/2 + delta / (2 d)``; a concordant pair is accepted on both sides with probability
``accept_rate``. So ``E[(b - c) / n] = delta``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from thinkbias.blindspot.stages import (
    BOUNDARIES,
    StagedResult,
    StageParams,
    run_exhaustive,
    run_staged,
    staged_target_calls,
)


@dataclass(frozen=True)
class SimulationDesign:
    """One simulated audit: inputs in equal clusters and the planted concepts."""

    n_inputs: int = 2500
    n_clusters: int = 10
    k0: int = 20
    n_null: int = 20
    effects: tuple[float, ...] = (0.02, 0.03, 0.04, 0.05, 0.06)
    discordance: float = 0.15
    accept_rate: float = 0.6


def simulated_members(design: SimulationDesign) -> pd.DataFrame:
    """Cluster ranks of the simulated inputs: ``n_clusters`` clusters of (nearly) equal size."""
    ids = [f"in{i:05d}" for i in range(design.n_inputs)]
    cluster = np.arange(design.n_inputs) % design.n_clusters
    df = pd.DataFrame({"input_id": ids, "cluster": cluster})
    df["rank"] = df.groupby("cluster").cumcount()
    df["is_representative"] = df["rank"] == 0
    df["distance"] = df["rank"].astype(float)
    return df


def planted_concepts(design: SimulationDesign) -> pd.DataFrame:
    """``concept_id, effect``: the null concepts first, then one concept per planted effect."""
    rows = [{"concept_id": f"null{i:02d}", "effect": 0.0} for i in range(design.n_null)]
    rows += [{"concept_id": f"effect{j:02d}_{e:.3f}", "effect": float(e)} for j, e in enumerate(design.effects)]
    return pd.DataFrame(rows)


def simulate_outcomes(design: SimulationDesign, rng: np.random.Generator) -> pd.DataFrame:
    """Paired decisions for every (concept, input); nobody verbalizes (so both verbalization filters
    pass every concept and the test alone decides)."""
    concepts = planted_concepts(design)
    ids = np.array([f"in{i:05d}" for i in range(design.n_inputs)])
    frames = []
    for cid, effect in zip(concepts["concept_id"], concepts["effect"]):
        d = design.discordance
        p_b = 0.5 + effect / (2 * d)
        if not 0.0 <= p_b <= 1.0:
            raise ValueError(f"effect {effect} is impossible with discordance {d}")
        disc = rng.random(design.n_inputs) < d
        is_b = rng.random(design.n_inputs) < p_b
        both = (rng.random(design.n_inputs) < design.accept_rate).astype(int)
        y_pos = np.where(disc, is_b.astype(int), both)
        y_neg = np.where(disc, (~is_b).astype(int), both)
        frames.append(
            pd.DataFrame(
                {
                    "concept_id": cid,
                    "input_id": ids,
                    "y_pos": y_pos.astype(float),
                    "y_neg": y_neg.astype(float),
                    "verbalized_pos": False,
                    "verbalized_neg": False,
                }
            )
        )
    # categorical ids: the procedure selects each stage's rows by id, which is several times faster
    return pd.concat(frames, ignore_index=True).astype({"concept_id": "category", "input_id": "category"})


PROCEDURES = ("paper", "exact", "exhaustive")


def run_procedure(
    procedure: str,
    outcomes: pd.DataFrame,
    members: pd.DataFrame,
    baseline: pd.DataFrame,
    concept_ids: list[str],
    k0: int,
    params: StageParams,
) -> StagedResult:
    """One audit of the simulated outcomes: ``paper`` / ``exact`` (the staged procedure with that
    efficacy boundary), ``staged`` (with ``params`` as given) or ``exhaustive`` (one test per concept
    on every input at alpha / m)."""
    if procedure == "exhaustive":
        return run_exhaustive(outcomes, members, baseline, concept_ids, k0, params)
    if procedure in BOUNDARIES:
        params = StageParams(**{**params.as_dict(), "boundary": procedure})
    elif procedure != "staged":
        raise ValueError(f"unknown procedure '{procedure}' (expected staged, exhaustive or one of {BOUNDARIES})")
    return run_staged(outcomes, members, baseline, concept_ids, k0, params)


def run_replicates(
    design: SimulationDesign,
    n_replicates: int,
    seed: int,
    params: StageParams = StageParams(),
    procedures: tuple[str, ...] = ("staged",),
    first_replicate: int = 0,
) -> pd.DataFrame:
    """Run each procedure on the same ``n_replicates`` simulated audits (replicates
    ``first_replicate`` onwards, so chunks run in parallel draw the same audits as one run).

    Returns one row per (procedure, replicate, concept): ``procedure, replicate, concept_id, effect,
    flagged, stage_flagged, last_stage, final_status``, and per replicate the call counts
    ``target_calls`` and ``exhaustive_target_calls``.
    """
    members = simulated_members(design)
    concepts = planted_concepts(design)
    ids = concepts["concept_id"].tolist()
    baseline = pd.DataFrame({"concept_id": ids, "input_id": members["input_id"].iloc[0], "verbalized": False})
    rows = []
    for r in range(first_replicate, first_replicate + n_replicates):
        rng = np.random.default_rng([seed, r])
        outcomes = simulate_outcomes(design, rng)
        # each replicate gets its own Monte Carlo stream for the conditional power
        rep_params = StageParams(**{**params.as_dict(), "power_seed": params.power_seed + r})
        for procedure in procedures:
            res = run_procedure(procedure, outcomes, members, baseline, ids, design.k0, rep_params)
            staged_calls, exhaustive = staged_target_calls(res.costs)
            flagged_at = dict(zip(res.flagged.get("concept_id", []), res.flagged.get("stage", [])))
            last = res.stages.groupby("concept_id")["stage"].max().to_dict()
            status = res.stages.sort_values("stage").groupby("concept_id")["status"].last().to_dict()
            for cid, effect in zip(concepts["concept_id"], concepts["effect"]):
                rows.append(
                    {
                        "procedure": procedure,
                        "replicate": r,
                        "concept_id": cid,
                        "effect": effect,
                        "flagged": cid in flagged_at,
                        "stage_flagged": flagged_at.get(cid, np.nan),
                        "last_stage": last.get(cid, np.nan),
                        "final_status": status.get(cid, "none"),
                        "target_calls": staged_calls,
                        "exhaustive_target_calls": exhaustive,
                    }
                )
    return pd.DataFrame(rows)


def proportion_ci(successes: int, trials: int, level: float = 0.95) -> tuple[float, float]:
    """Clopper-Pearson (exact binomial) interval of a proportion."""
    if trials == 0:
        return math.nan, math.nan
    ci = stats.binomtest(int(successes), int(trials)).proportion_ci(confidence_level=level, method="exact")
    return float(ci.low), float(ci.high)


def summarise(replicates: pd.DataFrame) -> dict:
    """Family-wise false-positive rate (share of replicates flagging any null concept) with its 95%
    Clopper-Pearson interval, power per effect size (with intervals), and the share of target calls
    saved against exhaustive testing, for one procedure."""
    per_rep = replicates.groupby("replicate")
    any_null = per_rep.apply(lambda g: bool(g.loc[g["effect"] == 0, "flagged"].any()))
    n_rep = int(len(any_null))
    fwer = float(any_null.mean())
    effects = replicates[replicates["effect"] > 0].groupby("effect")["flagged"]
    power = effects.mean().to_dict()
    power_ci = {float(e): proportion_ci(int(g.sum()), int(len(g))) for e, g in effects}
    calls = per_rep[["target_calls", "exhaustive_target_calls"]].first()
    saved = float(1 - calls["target_calls"].sum() / calls["exhaustive_target_calls"].sum())
    null_rate = float(replicates.loc[replicates["effect"] == 0, "flagged"].mean())
    return {
        "n_replicates": n_rep,
        "fwer": fwer,
        "fwer_ci95": list(proportion_ci(int(any_null.sum()), n_rep)),
        "per_null_false_positive_rate": null_rate,
        "power": {float(k): float(v) for k, v in power.items()},
        "power_ci95": {k: list(v) for k, v in power_ci.items()},
        "calls_saved": saved,
        "mean_target_calls": float(calls["target_calls"].mean()),
        "exhaustive_target_calls": float(calls["exhaustive_target_calls"].mean()),
    }


def summarise_procedures(replicates: pd.DataFrame) -> dict[str, dict]:
    """:func:`summarise` per procedure (in the order they appear)."""
    return {str(proc): summarise(sub) for proc, sub in replicates.groupby("procedure", sort=False)}


def comparison_table(summaries: dict[str, dict]) -> pd.DataFrame:
    """One row per procedure: FWER with its 95% interval, power per effect, calls saved."""
    rows = []
    for proc, s in summaries.items():
        lo, hi = s["fwer_ci95"]
        row = {
            "procedure": proc,
            "replicates": s["n_replicates"],
            "FWER": s["fwer"],
            "FWER 95% low": lo,
            "FWER 95% high": hi,
        }
        row.update({f"power {100 * e:g} pp": p for e, p in s["power"].items()})
        row["calls saved"] = s["calls_saved"]
        rows.append(row)
    return pd.DataFrame(rows)
