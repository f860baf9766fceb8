"""`snakemake plan` on the full configs (a real Snakemake run of the plan rule; nothing is generated)."""

from pathlib import Path

import pandas as pd

from tests.helpers import run_snakemake


def _plan(workflow_dir: Path, configfile: str) -> tuple[pd.DataFrame, str]:
    run_snakemake(workflow_dir, ["--cores", "1", "plan", "--configfile", configfile])
    return pd.read_csv(workflow_dir / "results/plan.csv"), (workflow_dir / "results/plan.md").read_text()


def test_position_full_plan_counts_the_papers_design_and_prices_the_api_run(workflow_dir: Path):
    table, text = _plan(workflow_dir, "config/position-full.yaml")
    # 6 local configurations x (1,000 + 496 + 198) questions x 4 orderings, 200 x 4 API prompts,
    # 2 truncation runs x 200 questions x 4 offsets x 3 continuations
    assert table["requests"].sum() == 6 * 1694 * 4 + 800 + 2 * 2400 == 46_256
    # jobs of shard_size 64: per local configuration ceil(4,000 / 64) + ceil(1,984 / 64) + ceil(792 / 64) shards,
    # 200 / 25 truncation shards per run, ceil(800 / 64) API shards
    assert table["jobs"].sum() == 6 * (63 + 31 + 13) + 2 * 8 + 13 == 671
    assert "in each of 658 jobs" in text and "planner.default_startup_s.llamacpp" in text
    api = table[table["model"] == "deepseek-r1-api"].iloc[0]
    assert api["generated_tokens"] == 800 * 7168 and api["token_source"] == "budget"
    # DeepSeek's list price: 800 x 220 prompt tokens at US$ 0.55 / M, 5,734,400 generated at US$ 2.19 / M
    assert abs(api["usd"] - (800 * 220 * 0.55 + 800 * 7168 * 2.19) / 1e6) < 1e-3
    r1 = table[(table["model"] == "r1-distill-qwen-7b-q4km") & (table["arm_or_mode"] == "reasoning")].iloc[0]
    assert r1["token_source"] == "paper" and r1["expected_generated_tokens"] == round(6776 * 5595 / 4)
    assert "Budget bound" in text and "## Assumptions" in text and "Wang 2026 §5.5" in text


def test_blindspot_full_plan_shows_the_calls_staged_testing_saves(workflow_dir: Path):
    table, text = _plan(workflow_dir, "config/blindspot-full.yaml")
    variations = table[table["arm_or_mode"].str.endswith("-variations")]
    # 2 sides x 25 concepts x (1,336 + 2,500 + 1,500) inputs x 8 targets
    assert variations["requests"].sum() == 2 * 25 * 5336 * 8 == 2_134_400
    assert (variations["expected_requests"] < variations["requests"]).all()
    assert "Blindspot early stopping: 2,134,400 variation calls under exhaustive testing" in text
    assert "planner.blindspot_saved_share" in text and "No price in the registry" in text
