"""End-to-end Snakemake runs of the position study: bring-your-own outputs with known numbers (no
model), and one small real run on the embedded model, shared by the tests that read it: the study's
products, and the depth probe's Table 5 and Figure 5 fused in its generation jobs (then, in a copy of
that run, from the cache through the separate job with the probe off)."""

import json
import math
import shutil

import numpy as np
import pandas as pd
import pytest

from tests.helpers import make_workflow_dir, run_snakemake, tiny_config

TABLES = ["table1_partial_correlation", "table2_summary", "table3_length_bins", "table4_wilcoxon", "length_quartiles"]
FIGURES = ["figure1_length_quartiles", "figure2_configurations", "figure3_truncation", "figure4_regimes"]


def _byo_generations() -> pd.DataFrame:
    """8 questions; direct mode always answers position A (PBS sqrt(.75), accuracy 1/4); reasoning mode
    always answers the correct content (PBS 0, accuracy 1) with question-dependent lengths."""
    rows = []
    for q in range(8):
        k = q % 4  # original correct position
        for s in range(4):
            correct = "ABCD"[(k + s) % 4]
            rows.append(
                {
                    "question_id": f"q{q}",
                    "permutation": s,
                    "model": "m",
                    "mode": "direct",
                    "full_text": "The answer is (A).",
                    "correct_position": correct,
                    "benchmark": "mmlu",
                }
            )
            rows.append(
                {
                    "question_id": f"q{q}",
                    "permutation": s,
                    "model": "m",
                    "mode": "reasoning",
                    "full_text": "Let me think. " * (q + 1) + f"The answer is ({correct}).",
                    "correct_position": correct,
                    "benchmark": "mmlu",
                }
            )
    return pd.DataFrame(rows)


def _check_products(root):
    for name in TABLES:
        assert (root / f"tables/{name}.csv").exists() and (root / f"tables/{name}.md").stat().st_size > 0
    for name in FIGURES:
        assert (root / f"figures/{name}.png").stat().st_size > 1000
    assert (root / "report.md").stat().st_size > 0


@pytest.mark.slow
def test_bring_your_own_outputs(workflow_dir):
    path = workflow_dir / "external.csv"
    _byo_generations().to_csv(path, index=False)
    cfg = tiny_config(
        position={
            "byo_generations": str(path),
            "wilcoxon_pairs": [{"reasoning": "m/reasoning", "reference": "m/direct"}],
        }
    )
    run_snakemake(workflow_dir, ["--cores", "1", "position"], config=cfg, timeout=600)
    root = workflow_dir / "results/position"
    _check_products(root)
    t2 = pd.read_csv(root / "tables/table2_summary.csv").set_index("mode")
    assert t2.loc["direct", "pbs"] == pytest.approx(math.sqrt(0.75))
    assert t2.loc["direct", "accuracy"] == pytest.approx(0.25)
    assert t2.loc["reasoning", "pbs"] == pytest.approx(0.0)
    assert t2.loc["reasoning", "accuracy"] == pytest.approx(1.0)
    assert (t2["extraction_rate"] == 1.0).all() and (t2["n_records"] == 32).all() and (t2["n_questions"] == 8).all()
    assert t2.loc["reasoning", "length"] == pytest.approx(sum(14 * (q + 1) + 18 for q in range(8)) / 8)
    t4 = pd.read_csv(root / "tables/table4_wilcoxon.csv").iloc[0]
    assert t4["gap"] == pytest.approx(-math.sqrt(0.75)) and t4["p_greater"] > 0.99 and t4["n_pairs"] == 8
    q = pd.read_csv(root / "questions.csv")
    assert len(q) == 16
    assert pd.read_csv(root / "tables/truncation_buckets.csv").empty


DEPTHS = [0.0, 0.5, 1.0]
N_QUESTIONS = 3
EMBEDDED = {
    "benchmarks": {"mmlu": {"path": "resources/raw/mmlu/mmlu.jsonl", "n_questions": N_QUESTIONS}},
    "max_tokens": {"direct": 4, "cot": 24, "reasoning": 24},
    "truncation": {"n_questions": 1, "n_continuations": 2, "max_tokens": 12},
    "depth_probe": {"enabled": True, "depths": DEPTHS},
}


@pytest.fixture(scope="module")
def embedded_run(tmp_path_factory, embedded_model):
    """The working folder and config of one run of the position target at EMBEDDED (the three
    modes, truncation and the depth probe on), which every test of the embedded model reads."""
    workdir = make_workflow_dir(tmp_path_factory.mktemp("position") / "wf")
    cfg = tiny_config(position=EMBEDDED)
    run_snakemake(workdir, ["--cores", "2", "position"], config=cfg, timeout=1500)
    return workdir, cfg


@pytest.mark.slow
def test_embedded_model_end_to_end(embedded_run):
    workflow_dir, _ = embedded_run
    root = workflow_dir / "results/position"
    _check_products(root)
    t2 = pd.read_csv(root / "tables/table2_summary.csv")
    assert sorted(t2["mode"]) == ["cot", "direct", "reasoning"]
    assert (t2["n_records"] == 12).all() and (t2["n_questions"] == 3).all()
    assert ((t2["extraction_rate"] >= 0) & (t2["extraction_rate"] <= 1)).all()
    records = pd.read_parquet(root / "records.parquet")
    assert len(records) == 36 and records["extraction_status"].notna().all()
    t1 = pd.read_csv(root / "tables/table1_partial_correlation.csv")
    assert len(t1) == 3 and (t1["n"] <= 3).all()
    cont = pd.read_csv(root / "truncation_continuations.csv")
    assert len(cont) % 2 == 0 and len(cont) <= 8


@pytest.mark.slow
def test_depth_probe_targets_end_to_end(embedded_run, tmp_path):
    workflow_dir, cfg = embedded_run
    root, metrics_dir = workflow_dir / "results/position", workflow_dir / "results/job_metrics/position"
    assert (root / "figures/figure5_depth_probe.png").stat().st_size > 1000
    table = pd.read_csv(root / "tables/table5_depth_probe.csv")
    assert (root / "tables/table5_depth_probe.md").read_text().startswith("## Table 5 (beyond the paper)")
    # the probed modes only: direct writes no trace
    assert sorted(table["mode"].unique()) == ["cot", "reasoning"] and len(table) == 2 * 7 * len(DEPTHS)
    fused = {}
    for mode in ("cot", "reasoning"):
        probes = pd.read_parquet(root / f"mmlu/generations/smollm2-135m/{mode}/shard-0.probes.parquet")
        assert len(probes) == N_QUESTIONS * 4 * len(DEPTHS)
        fused[mode] = probes
        gens = pd.read_parquet(root / f"mmlu/generations/smollm2-135m/{mode}/shard-0.parquet")
        assert (probes.groupby("depth")["trace_tokens"].max() > 0).all() and len(gens) == N_QUESTIONS * 4
        # the table's "all" row is the mean over questions of max_j mean_s P_s(j), recomputed here
        mbar = probes.groupby(["question_id", "depth"])[["p_A", "p_B", "p_C", "p_D"]].mean()
        expected = mbar.max(axis=1).groupby("depth").mean()
        got = table[(table["mode"] == mode) & (table["group"] == "all")].set_index("depth")
        assert got["preferred_mass"].to_numpy() == pytest.approx(expected.loc[got.index].to_numpy())
        assert (got["n_questions"] == N_QUESTIONS).all() and np.all(got["preferred_mass"] >= 0.25 - 1e-12)
        # fused: the generation job generated and probed in one pass, paying only the cue tokens
        metrics = json.loads((metrics_dir / f"generate/mmlu/smollm2-135m/{mode}/shard-0.json").read_text())
        assert metrics["generated_tokens"] > 0 and metrics["cached"] == 0 and metrics["probe_tokens"] > 0
    assert not (root / "mmlu/depth_probe").exists()  # the separate job did not run
    direct = root / "mmlu/generations/smollm2-135m/direct/shard-0.probes.parquet"
    assert not direct.exists() or pd.read_parquet(direct).empty

    # the probe off, in a copy of the run (the shared folder stays as the other tests read it):
    # position_table5 takes the separate job, which finds the generations and their probes in the
    # cache (the same keys), so Table 5 comes out the same without generating
    copy = tmp_path / "wf"
    shutil.copytree(workflow_dir, copy, symlinks=True)
    root, metrics_dir = copy / "results/position", copy / "results/job_metrics/position"
    off = {**cfg, "position": {**cfg["position"], "depth_probe": {"enabled": False, "depths": DEPTHS}}}
    run_snakemake(copy, ["--cores", "2", "position_table5"], config=off, timeout=1500)
    assert pd.read_csv(root / "tables/table5_depth_probe.csv").equals(table)
    for mode in ("cot", "reasoning"):
        probes = pd.read_parquet(root / f"mmlu/depth_probe/smollm2-135m/{mode}/shard-0.parquet")
        pd.testing.assert_frame_equal(probes, fused[mode])
        metrics = json.loads((metrics_dir / f"depth_probe/mmlu/smollm2-135m/{mode}/shard-0.json").read_text())
        assert metrics["generated_tokens"] == 0 and metrics["cached"] == N_QUESTIONS * 4
        assert metrics["probe_tokens"] == 0
        assert pd.read_parquet(root / f"mmlu/generations/smollm2-135m/{mode}/shard-0.probes.parquet").empty


def _planned_jobs(workflow_dir, orderings: str) -> dict[str, int]:
    """Job counts of a dry run of the position study (3 questions, the embedded model)."""
    cfg = tiny_config(
        position={
            "benchmarks": {"mmlu": {"path": "resources/raw/mmlu/mmlu.jsonl", "n_questions": 3}},
            "orderings": orderings,
        }
    )
    out = run_snakemake(workflow_dir, ["-n", "position"], config=cfg, timeout=300).stdout
    counts = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            counts[parts[0]] = int(parts[1])
    return counts


@pytest.mark.slow
def test_all_orderings_dry_run(workflow_dir):
    """24 orderings x 3 questions = 72 prompts per mode: five 16-prompt shards instead of one."""
    cyclic = _planned_jobs(workflow_dir, "cyclic")
    every = _planned_jobs(workflow_dir, "all")
    assert cyclic["position_generate"] == 3 and every["position_generate"] == 15
    assert every["position_gather"] == cyclic["position_gather"] == 3
    assert every["position_prompts"] == 1 and every["position_report"] == 1
