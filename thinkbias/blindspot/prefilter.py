"""The optional baseline-variance input prefilter (off by default, as in the paper's released scripts).

Before the staged testing, the target model answers every input ``responses_per_input`` times on the
unmodified text; the inputs whose decisions vary most (variance of the 0/1 acceptances, unparsable
decisions left out) are kept, at most ``max_inputs`` of them, and the stages draw their nested input
sets from the kept inputs only (each cluster's members re-ranked among the kept ones). Inputs the
model always accepts or always rejects cannot flip under a concept's variation as easily, so testing
them spends calls for little power.

The first response of every input is the same request as the baseline's (same seed), so the baseline
step is served from the cache and nothing is paid for twice.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

PREFILTER_COLUMNS = ["input_id", "n_responses", "n_parsable", "acceptance_rate", "variance", "order", "kept"]


def replicate_side(replicate: int) -> str:
    """The ``side`` that seeds a prefilter response: ``base`` (the baseline's own request) for the
    first, ``base-<r>`` for the others."""
    return "base" if replicate == 0 else f"base-{replicate}"


def prefilter_items(input_ids: list[str], responses_per_input: int) -> pd.DataFrame:
    """One row per (input, replicate): ``input_id, replicate, side`` (inputs in the given order)."""
    if responses_per_input < 1:
        raise ValueError(f"responses_per_input must be at least 1, got {responses_per_input}")
    rows = [(i, r, replicate_side(r)) for i in input_ids for r in range(responses_per_input)]
    return pd.DataFrame(rows, columns=["input_id", "replicate", "side"])


def acceptance_variance(responses: pd.DataFrame, input_ids: list[str]) -> pd.DataFrame:
    """Per input (in ``input_ids`` order): responses, parsable decisions, acceptance rate (NaN with
    none parsable) and the population variance of the 0/1 decisions (0 with none parsable, as the
    paper's code counts it). ``responses`` holds ``input_id`` and ``decision`` (1, 0 or NaN)."""
    rows = []
    grouped = dict(tuple(responses.groupby("input_id", sort=False)))
    for input_id in input_ids:
        decisions = grouped[input_id]["decision"] if input_id in grouped else pd.Series(dtype=float)
        parsable = decisions.dropna().to_numpy(dtype=float)
        rows.append(
            {
                "input_id": input_id,
                "n_responses": int(len(decisions)),
                "n_parsable": int(parsable.size),
                "acceptance_rate": float(parsable.mean()) if parsable.size else float("nan"),
                "variance": float(np.var(parsable)) if parsable.size else 0.0,
            }
        )
    return pd.DataFrame(rows, columns=PREFILTER_COLUMNS[:5])


def select_inputs(variances: pd.DataFrame, max_inputs: int | None) -> pd.DataFrame:
    """``variances`` with ``order`` (rank by variance, highest first; ties keep input order) and
    ``kept``: the first ``max_inputs`` by that order, or every input when ``max_inputs`` is None or
    not below their number (the paper's code filters nothing then)."""
    out = variances.reset_index(drop=True).copy()
    ranked = sorted(range(len(out)), key=lambda i: (-out.loc[i, "variance"], i))
    out["order"] = 0
    out.loc[ranked, "order"] = range(len(ranked))
    keep_all = max_inputs is None or len(out) <= max_inputs
    out["kept"] = True if keep_all else out["order"] < max_inputs
    return out[PREFILTER_COLUMNS]


def restrict_clusters(members: pd.DataFrame, kept: list[str]) -> pd.DataFrame:
    """The cluster table with only the ``kept`` inputs, each cluster's members re-ranked among them
    (old rank order kept), so ``stage_plan`` draws the nested stages from the kept inputs. A cluster
    left empty drops out."""
    out = members[members["input_id"].isin(set(kept))].sort_values(["cluster", "rank"]).copy()
    out["rank"] = out.groupby("cluster").cumcount().astype(int)
    return out.reset_index(drop=True)
