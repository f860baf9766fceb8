"""Configurations, prompt counts and shards from the config section."""

import pytest

from thinkbias.position.plan import generation_runs, n_prompts, shard_count, shard_slice, truncation_runs


SECTION = {
    "benchmarks": {"mmlu": {"path": "x", "n_questions": 10}, "arc": {"path": "y", "n_questions": 5}},
    "runs": [
        {"model": "a", "mode": "reasoning"},
        {"model": "b", "mode": "direct", "benchmarks": ["mmlu"], "n_questions": 3},
    ],
    "truncation": {
        "runs": [{"model": "a", "mode": "reasoning", "benchmark": "arc"}],
        "n_questions": 3,
        "questions_per_shard": 2,
    },
}


def test_runs_and_counts():
    runs = generation_runs(SECTION)
    assert [(r["benchmark"], r["model"], r["n_questions"]) for r in runs] == [
        ("mmlu", "a", 10),
        ("arc", "a", 5),
        ("mmlu", "b", 3),
    ]
    assert n_prompts(SECTION, "mmlu", "b", "direct") == 12
    assert shard_count(12, 5) == 3 and shard_count(0, 5) == 1
    assert [shard_slice(i, 5, 12) for i in range(4)] == [(0, 5), (5, 10), (10, 12), (12, 12)]
    assert truncation_runs(SECTION)[0]["benchmark"] == "arc"


def test_errors():
    with pytest.raises(ValueError, match="not configured"):
        generation_runs({**SECTION, "runs": [{"model": "a", "mode": "cot", "benchmarks": ["gpqa"]}]})
    with pytest.raises(ValueError, match="twice"):
        generation_runs({**SECTION, "runs": [{"model": "a", "mode": "cot"}] * 2})
    with pytest.raises(ValueError, match="no generation run"):
        truncation_runs({**SECTION, "truncation": {"runs": [{"model": "z", "mode": "cot", "benchmark": "mmlu"}]}})


def test_depth_probe_runs_follow_modes_and_byo():
    from thinkbias.position.plan import depth_probe_enabled, depth_probe_runs

    on = {**SECTION, "depth_probe": {"enabled": True, "modes": ["reasoning"]}}
    assert [(r["benchmark"], r["model"], r["mode"]) for r in depth_probe_runs(on)] == [
        ("mmlu", "a", "reasoning"),
        ("arc", "a", "reasoning"),
    ]
    assert depth_probe_enabled(on)
    off = {**on, "depth_probe": {"enabled": False, "modes": ["reasoning"]}}
    assert len(depth_probe_runs(off)) == 2 and not depth_probe_enabled(off)  # the named targets still run it
    cot = {**on, "depth_probe": {"enabled": True, "modes": ["cot"]}}
    assert depth_probe_runs(cot) == [] and not depth_probe_enabled(cot)
    assert depth_probe_runs({**on, "byo_generations": "x.csv"}) == []
