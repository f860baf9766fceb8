"""A bring-your-own run takes the paper's stage parameters (blindspot.byo.stages, k0 = 20), not the
embedded default's (k0 = 4), and its tables and report print the parameters used. The outcome file
has 6 planted biased concepts and 4 null ones."""

import numpy as np
import pandas as pd
import pytest

from tests.helpers import REPO, base_config, deep_merge, run_snakemake, tiny_config
from thinkbias.blindspot.byo import read_outcomes, run_byo
from thinkbias.blindspot.report import render_byo_report, stage_parameters_line
from thinkbias.blindspot.stage_params import PAPER_K0, StageParams, stage_parameters
from thinkbias.config import validate_config

BIASED = [f"biased_{i}" for i in range(6)]
NULL = [f"null_{i}" for i in range(4)]


def planted_outcomes(path, n_clusters=10, per_cluster=40, effect=0.12, discordant=0.4, seed=0):
    """A seeded outcome table: per concept and input, (y_pos, y_neg) = (1, 0) with probability
    (discordant + effect) / 2, (0, 1) with (discordant - effect) / 2, else concordant; the biased
    concepts have ``effect``, the null ones 0; nothing is verbalized."""
    rng = np.random.default_rng(seed)
    rows = []
    for concept in BIASED + NULL:
        eff = effect if concept in BIASED else 0.0
        for cluster in range(n_clusters):
            for rank in range(per_cluster):
                u = rng.random()
                if u < (discordant + eff) / 2:
                    y = (1, 0)
                elif u < discordant:
                    y = (0, 1)
                else:
                    y = (1, 1) if rng.random() < 0.5 else (0, 0)
                rows.append(
                    {
                        "model": "m",
                        "task": "loan",
                        "concept_id": concept,
                        "input_id": f"c{cluster}-r{rank:02d}",
                        "cluster": f"c{cluster}",
                        "rank": rank,
                        "y_pos": y[0],
                        "y_neg": y[1],
                        "verbalized_pos": "false",
                        "verbalized_neg": "false",
                    }
                )
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def byo_config(outcomes, byo_stages: dict | None = None) -> dict:
    """The embedded default with a bring-your-own outcome file, validated (defaults filled)."""
    byo = {"outcomes": str(outcomes), **({"stages": byo_stages} if byo_stages else {})}
    cfg = deep_merge(base_config(), {"blindspot": {"byo": byo}})
    return validate_config(cfg, REPO / "config/schema/config.schema.yaml")["blindspot"]


def run_with(stages: dict, outcomes: pd.DataFrame):
    params = StageParams(**{k: v for k, v in stages.items() if k not in ("k0", "max_stages")})
    return run_byo(outcomes, None, stages["k0"], params, stages["max_stages"]), params


def test_a_byo_run_takes_the_papers_stage_parameters(tmp_path):
    path = planted_outcomes(tmp_path / "outcomes.csv")
    outcomes = read_outcomes(path)
    section = byo_config(path)
    assert section["stages"]["k0"] == 4  # the embedded default's audits
    assert section["byo"]["stages"]["k0"] == PAPER_K0 == 20
    assert {k: v for k, v in section["byo"]["stages"].items() if k not in ("k0", "max_stages")} == (
        StageParams().as_dict()
    )
    (stages, flagged, _, _), _ = run_with(section["byo"]["stages"], outcomes)
    assert sorted(flagged["concept_id"]) == BIASED
    assert sorted(stages.groupby("stage")["n_inputs"].first()) == [200, 400]
    # the embedded default's stages on the same file (what a bring-your-own run used before): 5 stages,
    # the last at a stricter Bonferroni level, where two planted concepts are not significant
    (stages, flagged_k4, _, _), _ = run_with(section["stages"], outcomes)
    assert set(flagged_k4["concept_id"]) < set(BIASED) and len(flagged_k4) == 4
    assert sorted(stages.groupby("stage")["n_inputs"].first()) == [40, 80, 160, 320, 400]
    missed = stages[stages["concept_id"].isin(set(BIASED) - set(flagged_k4["concept_id"]))]
    assert set(missed.loc[missed["stage"] == 4, "status"]) == {"not_significant"}


def test_byo_stages_can_be_set_and_are_checked(tmp_path):
    path = planted_outcomes(tmp_path / "outcomes.csv")
    assert byo_config(path, {"k0": 10, "boundary": "exact"})["byo"]["stages"]["k0"] == 10
    with pytest.raises(ValueError, match=r"config key 'blindspot.byo.stages.k0' = 0: expected >= 1"):
        byo_config(path, {"k0": 0})
    with pytest.raises(ValueError, match=r"config key 'blindspot.byo.stages.kzero' = 3: unknown key"):
        byo_config(path, {"kzero": 3})


def test_tables_and_report_print_the_stage_parameters(tmp_path):
    path = planted_outcomes(tmp_path / "outcomes.csv")
    used = stage_parameters(20, None, StageParams())
    assert used["value"].tolist() == used["paper"].tolist()
    assert used.set_index("parameter").loc["k0", "value"] == 20
    line = stage_parameters_line(used)
    assert line.startswith("Stage parameters: k0 = 20, max_stages = none, alpha = 0.05, ") and "(paper" not in line
    small = stage_parameters(4, 2, StageParams(boundary="exact"))
    line = stage_parameters_line(small)
    assert "k0 = 4 (paper: 20), max_stages = 2 (paper: none)" in line and "boundary = exact (paper: paper)" in line
    (stages, flagged, funnel, costs), _ = run_with(byo_config(path)["byo"]["stages"], read_outcomes(path))
    report = render_byo_report(flagged, funnel, costs, stages, used, {}, {"bring-your-own outcomes": str(path)})
    assert "- stages.k0: 20\n" in report and "- stages.boundary: paper\n" in report
    assert f"- bring-your-own outcomes: {path}\n" in report and "- audits (model / task): m / loan\n" in report


@pytest.mark.slow
def test_a_byo_workflow_run_prints_and_uses_the_papers_stage_parameters(workflow_dir):
    path = planted_outcomes(workflow_dir / "outcomes.csv")
    config = tiny_config(blindspot={"byo": {"outcomes": str(path)}})
    run_snakemake(workflow_dir, ["--cores", "1", "blindspot"], config=config, timeout=600)
    out = workflow_dir / "results/blindspot/byo"
    assert sorted(pd.read_csv(out / "flagged.csv")["concept_id"]) == BIASED
    assert (out / "flagged.md").read_text().startswith("Stage parameters: k0 = 20, max_stages = none, alpha = 0.05, ")
    used = pd.read_csv(out / "stage_params.csv", dtype=str).set_index("parameter")
    assert used.loc["k0", "value"] == "20" and used.loc["boundary", "value"] == "paper"
    report = (out / "report.md").read_text()
    assert "- stages.k0: 20\n" in report and "## Flagged unverbalized biases" in report
    # told otherwise, it uses and prints that
    config = tiny_config(blindspot={"byo": {"outcomes": str(path), "stages": {"k0": 4}}})
    run_snakemake(workflow_dir, ["--cores", "1", "blindspot"], config=config, timeout=600)
    assert len(pd.read_csv(out / "flagged.csv")) == 4
    assert (out / "flagged.md").read_text().startswith("Stage parameters: k0 = 4 (paper: 20), ")
