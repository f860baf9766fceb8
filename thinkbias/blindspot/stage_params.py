"""The staged procedure's parameters (thresholds, paper values) and the table a run prints of them.

Kept apart from :mod:`thinkbias.blindspot.stages`, which needs scipy and scikit-learn, because the
Snakefile reads these at every invocation.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import pandas as pd

from thinkbias.blindspot.clusters import LAST_STAGE_RULES

BOUNDARIES = ("paper", "exact")
# thinkbias.stats.mcnemar.CORRECTIONS, repeated: that module loads scipy.stats
MCNEMAR_CORRECTIONS = ("statsmodels", "floored")
# the significance test of a stage: McNemar's paired test (the paper's), or Fisher's exact test of the unpaired table
TESTS = ("mcnemar", "fisher")
# the paper's stage-0 inputs per cluster (stages of 200, 400, 800, ... inputs over 10 clusters)
PAPER_K0 = 20


@dataclass(frozen=True)
class StageParams:
    """Thresholds of the procedure (paper values by default)."""

    alpha: float = 0.05
    baseline_verbalization_threshold: float = 0.3
    variation_verbalization_threshold: float = 0.3
    futility_power_floor: float = 0.01
    futility_min_discordant: int = 25
    n_simulations: int = 50_000
    power_seed: int = 0
    exact_below: int = 25
    early_stopping: bool = True
    boundary: str = "paper"
    last_stage: str = "all_inputs"
    mcnemar_correction: str = "statsmodels"
    test: str = "mcnemar"
    bonferroni: bool = True

    def __post_init__(self) -> None:
        for key, allowed in (
            ("boundary", BOUNDARIES),
            ("last_stage", LAST_STAGE_RULES),
            ("mcnemar_correction", MCNEMAR_CORRECTIONS),
            ("test", TESTS),
        ):
            if getattr(self, key) not in allowed:
                raise ValueError(f"stages.{key} must be one of {', '.join(allowed)}, got '{getattr(self, key)}'")

    def as_dict(self) -> dict:
        return asdict(self)


def stage_parameters(k0: int, max_stages: int | None, params: StageParams) -> pd.DataFrame:
    """The parameters a run of the procedure used, one row each: ``parameter, value, paper`` (the
    paper's value: k0 = 20, every run to the last stage, and :class:`StageParams`' defaults)."""
    paper = {"k0": PAPER_K0, "max_stages": None, **StageParams().as_dict()}
    used = {"k0": int(k0), "max_stages": max_stages, **params.as_dict()}
    return pd.DataFrame(
        [{"parameter": key, "value": used[key], "paper": paper[key]} for key in paper],
        columns=["parameter", "value", "paper"],
    )
