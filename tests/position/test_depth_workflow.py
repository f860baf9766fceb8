"""A real Snakemake run of the depth probe's Table 5 and Figure 5 on the embedded model: fused in the
generation jobs with the probe on, from the cache through the separate job with it off."""

import json

import numpy as np
import pandas as pd
import pytest

from tests.helpers import run_snakemake, tiny_config


@pytest.mark.slow
def test_depth_probe_targets_end_to_end(workflow_dir, embedded_model):
    depths = [0.0, 0.5, 1.0]
    cfg = tiny_config(
        position={
            "benchmarks": {"mmlu": {"path": "resources/raw/mmlu/mmlu.jsonl", "n_questions": 2}},
            "runs": [{"model": "smollm2-135m", "mode": "cot"}, {"model": "smollm2-135m", "mode": "reasoning"}],
            "max_tokens": {"direct": 4, "cot": 16, "reasoning": 16},
            "wilcoxon_pairs": [{"reasoning": "smollm2-135m/reasoning", "reference": "smollm2-135m/cot"}],
            "depth_probe": {"enabled": True, "depths": depths},
        }
    )
    run_snakemake(workflow_dir, ["--cores", "2", "position_table5", "position_figure5"], config=cfg, timeout=1500)
    root, metrics_dir = workflow_dir / "results/position", workflow_dir / "results/job_metrics/position"
    assert (root / "figures/figure5_depth_probe.png").stat().st_size > 1000
    table = pd.read_csv(root / "tables/table5_depth_probe.csv")
    assert (root / "tables/table5_depth_probe.md").read_text().startswith("## Table 5 (beyond the paper)")
    assert sorted(table["mode"].unique()) == ["cot", "reasoning"] and len(table) == 2 * 7 * len(depths)
    fused = {}
    for mode in ("cot", "reasoning"):
        probes = pd.read_parquet(root / f"mmlu/generations/smollm2-135m/{mode}/shard-0.probes.parquet")
        assert len(probes) == 2 * 4 * len(depths)
        fused[mode] = probes
        gens = pd.read_parquet(root / f"mmlu/generations/smollm2-135m/{mode}/shard-0.parquet")
        assert (probes.groupby("depth")["trace_tokens"].max() > 0).all() and len(gens) == 8
        # the table's "all" row is the mean over questions of max_j mean_s P_s(j), recomputed here
        mbar = probes.groupby(["question_id", "depth"])[["p_A", "p_B", "p_C", "p_D"]].mean()
        expected = mbar.max(axis=1).groupby("depth").mean()
        got = table[(table["mode"] == mode) & (table["group"] == "all")].set_index("depth")
        assert got["preferred_mass"].to_numpy() == pytest.approx(expected.loc[got.index].to_numpy())
        assert (got["n_questions"] == 2).all() and np.all(got["preferred_mass"] >= 0.25 - 1e-12)
        # fused: the generation job generated and probed in one pass, paying only the cue tokens
        metrics = json.loads((metrics_dir / f"generate/mmlu/smollm2-135m/{mode}/shard-0.json").read_text())
        assert metrics["generated_tokens"] > 0 and metrics["cached"] == 0 and metrics["probe_tokens"] > 0
    assert not (root / "mmlu/depth_probe").exists()  # the separate job did not run

    # the probe off: position_table5 takes the separate job, which finds the generations and their
    # probes in the cache (the same keys), so Table 5 comes out the same without generating
    cfg["position"]["depth_probe"]["enabled"] = False
    run_snakemake(workflow_dir, ["--cores", "2", "position_table5"], config=cfg, timeout=1500)
    assert pd.read_csv(root / "tables/table5_depth_probe.csv").equals(table)
    for mode in ("cot", "reasoning"):
        probes = pd.read_parquet(root / f"mmlu/depth_probe/smollm2-135m/{mode}/shard-0.parquet")
        pd.testing.assert_frame_equal(probes, fused[mode])
        metrics = json.loads((metrics_dir / f"depth_probe/mmlu/smollm2-135m/{mode}/shard-0.json").read_text())
        assert metrics["generated_tokens"] == 0 and metrics["cached"] == 8 and metrics["probe_tokens"] == 0
        assert pd.read_parquet(root / f"mmlu/generations/smollm2-135m/{mode}/shard-0.probes.parquet").empty
