"""End-to-end Snakemake runs of the position study: bring-your-own outputs with known numbers (no
model), and one small real run on the embedded model."""

import math

import pandas as pd
import pytest

from tests.helpers import run_snakemake, tiny_config

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


@pytest.mark.slow
def test_embedded_model_end_to_end(workflow_dir, embedded_model):
    cfg = tiny_config(
        position={
            "benchmarks": {"mmlu": {"path": "resources/raw/mmlu/mmlu.jsonl", "n_questions": 3}},
            "max_tokens": {"direct": 4, "cot": 24, "reasoning": 24},
            "truncation": {"n_questions": 1, "n_continuations": 2, "max_tokens": 12},
        }
    )
    run_snakemake(workflow_dir, ["--cores", "2", "position"], config=cfg, timeout=1500)
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
