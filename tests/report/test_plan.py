"""The run planner's counts on a hand-worked config."""

from pathlib import Path

from thinkbias.report.plan import Throughput, plan_markdown, plan_table, preparation_markdown, preparation_table

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


PREP_REGISTRY = {
    "small": {"backend": "llamacpp", "files": [{"name": "s.gguf"}], "size_gb": 0.1},
    "big": {"backend": "vllm", "gpus": 1, "files": [{"name": "a"}], "size_gb": 36.0, "source": {"revision": "a" * 40}},
    "big-awq": {"backend": "vllm", "gpus": 1, "quantize": {"from": "big", "method": "awq"}, "files": [{"name": "r"}]},
    "unused": {"backend": "vllm", "gpus": 1, "files": [{"name": "u"}], "size_gb": 5.0},
    "api": {"backend": "openai"},
}


def test_preparation_lists_downloads_and_quantization_of_the_enabled_studies():
    config = {"fairness": {"enabled": True, "models": ["big-awq"]},
              "position": {"enabled": True, "runs": [{"model": "small"}, {"model": "api"}]},
              "blindspot": {"enabled": False, "models": ["unused"]}}
    table = preparation_table(config, PREP_REGISTRY, {"small"}, download_mb_per_s=100.0, quantize_hours=1.5)
    rows = {r["model"]: r for r in table.to_dict("records")}
    assert set(rows) == {"small", "big", "big-awq"}  # the quantized model's source is downloaded; API and disabled are not
    assert rows["small"]["job"] == "fetch" and rows["big"]["job"] == "weights_big"
    assert rows["big"]["hours"] == round(36.0 * 1000 / 100 / 3600, 2) == 0.1 and rows["big"]["gpu_hours"] == 0
    assert rows["big-awq"]["job"] == "quantize_big_awq" and rows["big-awq"]["gpu_hours"] == 1.5
    text = preparation_markdown(table)
    assert "Downloads: 2 (36.1 GB); quantizations: 1 (1.5 GPU-hours)." in text
