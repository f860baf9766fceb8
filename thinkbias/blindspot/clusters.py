"""Input clustering and the nested stage input sets (spec Sec. 3.1 and 3.7).

Inputs are embedded, grouped with KMeans (k = 10 in the paper), and each cluster's representative is
the member closest to its centroid. Members are ranked by squared L2 distance to the representative;
the hypothesis step shows the 3 nearest members of every cluster, and stage s tests the
``k_s = k_0 * 2**s`` nearest members of every cluster (capped by the cluster's size), so stages are
nested. Unlike the paper's unseeded KMeans, the clustering here is seeded and reproducible.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import numpy as np
import pandas as pd


def cluster_inputs(input_ids: list[str], embeddings: np.ndarray, n_clusters: int, seed: int) -> pd.DataFrame:
    """KMeans (seeded, ``n_init=10``) over the embeddings.

    Returns one row per input: ``input_id, cluster, is_representative, distance`` (squared L2 to the
    cluster's representative) and ``rank`` (0 for the representative, then by distance, ties by id).
    Clusters are renumbered by the sorted id of their representative, so labels do not depend on
    KMeans' label order.
    """
    x = np.asarray(embeddings, dtype=np.float64)
    if x.ndim != 2 or x.shape[0] != len(input_ids):
        raise ValueError("embeddings must be a (n_inputs, dim) array matching input_ids")
    k = max(1, min(n_clusters, len(input_ids)))
    from sklearn.cluster import KMeans  # here, not at the top: the Snakefile imports this module's plan helpers

    km = KMeans(n_clusters=k, n_init=10, random_state=seed).fit(x)
    labels = km.labels_
    rows = []
    reps = {}
    for label in range(k):
        idx = np.flatnonzero(labels == label)
        if idx.size == 0:
            continue
        d_centroid = ((x[idx] - km.cluster_centers_[label]) ** 2).sum(axis=1)
        order = np.lexsort((np.array([input_ids[i] for i in idx]), d_centroid))
        rep = idx[order[0]]
        reps[label] = input_ids[rep]
        d_rep = ((x[idx] - x[rep]) ** 2).sum(axis=1)
        for i, d in zip(idx, d_rep):
            rows.append(
                {"input_id": input_ids[i], "label": label, "distance": float(d), "is_representative": bool(i == rep)}
            )
    df = pd.DataFrame(rows)
    relabel = {lab: new for new, (lab, _) in enumerate(sorted(reps.items(), key=lambda kv: kv[1]))}
    df["cluster"] = df["label"].map(relabel).astype(int)
    df = df.drop(columns="label")
    # the representative first, then by distance (ties broken by id)
    df["_rep_first"] = (~df["is_representative"]).astype(int)
    df = df.sort_values(["cluster", "_rep_first", "distance", "input_id"]).drop(columns="_rep_first")
    df["rank"] = df.groupby("cluster").cumcount().astype(int)
    return df[["input_id", "cluster", "rank", "is_representative", "distance"]].reset_index(drop=True)


def nearest_members(members: pd.DataFrame, k: int) -> list[str]:
    """The ``k`` members of every cluster nearest its representative (ids, by cluster then rank)."""
    sel = members[members["rank"] < k].sort_values(["cluster", "rank"])
    return sel["input_id"].tolist()


def hypothesis_batches(members: pd.DataFrame, per_cluster: int, batch_size: int, seed: int) -> list[list[str]]:
    """Inputs shown to the concept-hypothesis autorater: ``per_cluster`` nearest members of every
    cluster (30 in the paper), shuffled with a seeded generator, cut into batches (3 per prompt)."""
    ids = nearest_members(members, per_cluster)
    random.Random(f"hypothesis:{seed}").shuffle(ids)
    return [ids[i : i + batch_size] for i in range(0, len(ids), batch_size)]


LAST_STAGE_RULES = ("all_inputs", "coverage")
"""How the last stage is chosen (:func:`stage_plan`)."""
# a stage covering this share of the inputs runs no futility or efficacy check (the paper's code)
NEAR_COMPLETE = 0.99


@dataclass(frozen=True)
class StagePlan:
    """One stage of the nested schedule: per-cluster depth ``k``, its inputs and whether it is last."""

    stage: int
    k: int
    input_ids: tuple[str, ...]
    n_inputs: int
    n_total: int
    is_last: bool
    look_fractions: tuple[float, ...] = ()
    early_checks: bool = True
    """Whether futility and efficacy are checked here: not at the last stage, nor at a stage covering
    99% of the inputs or more."""

    @property
    def information_fraction(self) -> float:
        return self.n_inputs / self.n_total if self.n_total else 1.0

    @property
    def fractions_so_far(self) -> tuple[float, ...]:
        """Information fractions of stages 0..stage (the looks a concept tested at every stage has had)."""
        return self.look_fractions or (self.information_fraction,)


def stage_plan(
    members: pd.DataFrame, stage: int, k0: int, max_stages: int | None = None, last_stage: str = "all_inputs"
) -> StagePlan:
    """Stage ``stage`` of the schedule ``k_s = k0 * 2**s`` per cluster.

    A stage is the last when it is stage ``max_stages - 1``, or by ``last_stage``: ``all_inputs`` (the
    paper's code): when it uses every input; a stage covering 99% of them or more, but not all, runs
    no futility or efficacy check and the next stage, on every input, is the last. ``coverage``: the
    first stage covering at least 99% of the inputs is the last.
    """
    if last_stage not in LAST_STAGE_RULES:
        raise ValueError(f"unknown last_stage rule '{last_stage}' (expected one of {', '.join(LAST_STAGE_RULES)})")
    n_total = len(members)
    k = k0 * 2**stage
    ids = nearest_members(members, k)
    near_complete = len(ids) >= NEAR_COMPLETE * n_total
    complete = len(ids) >= n_total if last_stage == "all_inputs" else near_complete
    is_last = complete or (max_stages is not None and stage >= max_stages - 1)
    ranks = members["rank"].to_numpy()
    looks = tuple(int((ranks < k0 * 2**j).sum()) / n_total for j in range(stage + 1)) if n_total else ()
    return StagePlan(stage, k, tuple(ids), len(ids), n_total, bool(is_last), looks, not (is_last or near_complete))


def stage_schedule(
    members: pd.DataFrame, k0: int, max_stages: int | None = None, last_stage: str = "all_inputs"
) -> list[StagePlan]:
    """Every stage up to and including the last one (``last_stage``: :func:`stage_plan`)."""
    plans = []
    stage = 0
    while True:
        plan = stage_plan(members, stage, k0, max_stages, last_stage)
        plans.append(plan)
        if plan.is_last:
            return plans
        stage += 1
