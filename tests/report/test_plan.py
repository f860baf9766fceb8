"""The run planner's counts on a hand-worked config."""

from pathlib import Path

from thinkbias.report.plan import Throughput, plan_markdown, plan_table

REGISTRY = {"m": {"backend": "vllm", "gpus": 2}, "api": {"backend": "openai"}}
CONFIG = {
    "fairness": {"enabled": True, "models": ["m"], "datasets": ["adult", "compas"], "n_records": 10,
                 "think_budget": 90, "answer_budget": 10, "depths": 10, "sensitivity_depths": [5, 10, 20]},
    "position": {"enabled": True, "benchmarks": {"mmlu": {"n_questions": 5}}, "max_tokens": {"direct": 4},
                 "runs": [{"model": "api", "mode": "direct"}], "truncation": {"runs": []}},
    "blindspot": {"enabled": False},
}


def test_plan_counts_requests_tokens_probes_and_gpu_hours(tmp_path: Path):
    table = plan_table(CONFIG, REGISTRY, {"fairness": 100, "position": 50},
                       {"m": Throughput(100.0, prefill_ratio=10.0, probe_tokens=10), "api": Throughput(10.0)},
                       cache_dir=tmp_path)
    think = table[(table["model"] == "m") & (table["arm_or_mode"] == "think")].iloc[0]
    # 10 records x 2 datasets x 2 sides; depth grids 5, 10, 20 give the 21 fractions k/20
    assert think["requests"] == 40 and think["probe_passes"] == 40 * 21
    assert think["generated_tokens"] == 40 * 100 and think["prompt_tokens"] == 4000
    seconds = (4000 + 4000 / 10 + 840 * 10 / 10) / 100
    assert think["hours"] == round(seconds / 3600, 2) and think["gpu_hours"] == round(2 * seconds / 3600, 2)
    direct = table[table["study"] == "position"].iloc[0]
    assert direct["requests"] == 20 and direct["gpu_hours"] == 0
    assert set(table["token_source"]) == {"budget"}
    assert "840" in plan_markdown(table[table["study"] == "fairness"], 900000).replace(",", "")
