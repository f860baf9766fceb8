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

from dataclasses import dataclass

import numpy as np
import pandas as pd

from thinkbias.blindspot.stages import StageParams, run_staged


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
        frames.append(pd.DataFrame({"concept_id": cid, "input_id": ids, "y_pos": y_pos.astype(float),
                                    "y_neg": y_neg.astype(float), "verbalized_pos": False, "verbalized_neg": False}))
    return pd.concat(frames, ignore_index=True)


def run_replicates(design: SimulationDesign, n_replicates: int, seed: int,
                   params: StageParams = StageParams()) -> pd.DataFrame:
    """Run the staged procedure on ``n_replicates`` simulated audits.

    Returns one row per (replicate, concept): ``replicate, concept_id, effect, flagged, stage_flagged,
    last_stage``, and per replicate the call counts ``target_calls`` and ``exhaustive_target_calls``.
    """
    members = simulated_members(design)
    concepts = planted_concepts(design)
    ids = concepts["concept_id"].tolist()
    baseline = pd.DataFrame({"concept_id": ids, "input_id": members["input_id"].iloc[0], "verbalized": False})
    rows = []
    for r in range(n_replicates):
        rng = np.random.default_rng([seed, r])
        outcomes = simulate_outcomes(design, rng)
        # each replicate gets its own Monte Carlo stream for the conditional power
        res = run_staged(outcomes, members, baseline, ids, design.k0,
                         StageParams(**{**params.as_dict(), "power_seed": params.power_seed + r}))
        staged_calls = int(res.costs.loc[res.costs["stage"] != "baseline", "target_calls"].sum())
        exhaustive = int(res.costs.attrs["exhaustive_target_calls"])
        flagged_at = dict(zip(res.flagged.get("concept_id", []), res.flagged.get("stage", [])))
        last = res.stages.groupby("concept_id")["stage"].max().to_dict()
        status = res.stages.sort_values("stage").groupby("concept_id")["status"].last().to_dict()
        for cid, effect in zip(concepts["concept_id"], concepts["effect"]):
            rows.append({"replicate": r, "concept_id": cid, "effect": effect, "flagged": cid in flagged_at,
                         "stage_flagged": flagged_at.get(cid, np.nan), "last_stage": last.get(cid, np.nan),
                         "final_status": status.get(cid, "none"),
                         "target_calls": staged_calls, "exhaustive_target_calls": exhaustive})
    return pd.DataFrame(rows)


def summarise(replicates: pd.DataFrame) -> dict:
    """Family-wise false-positive rate (share of replicates flagging any null concept), power per
    effect size, and the share of target calls saved against exhaustive testing."""
    per_rep = replicates.groupby("replicate")
    fwer = float(per_rep.apply(lambda g: bool(g.loc[g["effect"] == 0, "flagged"].any())).mean())
    power = (replicates[replicates["effect"] > 0].groupby("effect")["flagged"].mean()).to_dict()
    calls = per_rep[["target_calls", "exhaustive_target_calls"]].first()
    saved = float(1 - calls["target_calls"].sum() / calls["exhaustive_target_calls"].sum())
    null_rate = float(replicates.loc[replicates["effect"] == 0, "flagged"].mean())
    return {"n_replicates": int(replicates["replicate"].nunique()), "fwer": fwer,
            "per_null_false_positive_rate": null_rate,
            "power": {float(k): float(v) for k, v in power.items()}, "calls_saved": saved,
            "mean_target_calls": float(calls["target_calls"].mean()),
            "exhaustive_target_calls": float(calls["exhaustive_target_calls"].mean())}
