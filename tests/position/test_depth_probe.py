"""Depth probe on the embedded model: every probe equals a separate ``probe`` call on the same tokens."""

import pandas as pd
import pytest

from thinkbias.llm.base import fraction_cuts
from thinkbias.llm.types import LETTERS
from thinkbias.position.depth_probe import PROBE_COLUMNS, check_depths, depth_cue, probe_depths
from thinkbias.position.generation import build_requests, generations_table
from thinkbias.position.items import OPTION_COLUMNS

DEPTHS = [0.0, 0.5, 1.0]


def _prompts() -> pd.DataFrame:
    options = ["Paris", "Rome", "Madrid", "Berlin"]
    rows = []
    for s in range(2):
        shown = [options[(j - s) % 4] for j in range(4)]
        rows.append({"question_id": "mmlu:q1", "benchmark": "mmlu", "item_id": "q1", "permutation": s,
                     "question": "What is the capital of France?", **dict(zip(OPTION_COLUMNS, shown)),
                     "correct_position": "ABCD"[s]})
    return pd.DataFrame(rows)


def _setup(embedded_model, mode, cache_dir):
    from thinkbias.llm import load_model_spec, open_engine
    from thinkbias.llm.thinking import arm_prefill, thinking_instruction

    spec = load_model_spec("config/models.yaml", "smollm2-135m", weights=str(embedded_model))
    prompts = _prompts()
    think = arm_prefill(spec, "think") if mode == "reasoning" else ""
    reqs = build_requests(prompts, mode, think, arm_prefill(spec, "nothink"), thinking_instruction(spec), 20)
    with open_engine(spec, cache_dir, n_threads=2) as engine:
        gens = generations_table(prompts, "smollm2-135m", mode, reqs, engine.generate(reqs))
    return spec, reqs, gens


def _separate_probes(spec, reqs, gens, mode, table):
    """Each (record, depth) again through one ``probe`` call with one cut, on an engine without cache."""
    from thinkbias.llm import open_engine

    cue = depth_cue(mode, spec.think_close)
    with open_engine(spec, None, n_threads=2) as engine:
        for i, (req, g) in enumerate(zip(reqs, gens.itertuples(index=False))):
            trace = g.thinking if mode == "reasoning" else g.text
            n = engine.count_tokens(trace)
            assert n > 0
            got = table[table["permutation"] == g.permutation].sort_values("depth")
            assert list(got["cut_tokens"]) == fraction_cuts(DEPTHS, n) and (got["trace_tokens"] == n).all()
            for cut, row in zip(fraction_cuts(DEPTHS, n), got.itertuples(index=False)):
                sc = engine.probe(req, trace, [cut], cue, LETTERS)[0]
                yield row, sc


@pytest.mark.parametrize("mode", ["reasoning", "cot"])
def test_depth_probes_equal_separate_probe_calls(embedded_model, tmp_path, mode):
    from thinkbias.llm import open_engine

    spec, reqs, gens = _setup(embedded_model, mode, tmp_path / "cache")
    with open_engine(spec, tmp_path / "cache", n_threads=2) as engine:  # the generations are cached
        table = probe_depths(engine, reqs, gens, mode, spec.think_close, DEPTHS)
        assert engine.stats.generated_tokens == 0
    assert list(table.columns) == list(PROBE_COLUMNS) and len(table) == len(gens) * len(DEPTHS)
    n = 0
    for row, sc in _separate_probes(spec, reqs, gens, mode, table):
        for c in "ABCD":
            assert getattr(row, f"p_{c}") == pytest.approx(sc.probs[c], abs=1e-6)
        assert row.outside_mass == pytest.approx(sc.outside_mass, abs=1e-6)
        n += 1
    assert n == len(table)
    # the probe distributions are not degenerate: the depths read different states
    assert table.groupby("permutation")["p_A"].nunique().max() > 1


def test_uncached_reasoning_probe_rides_on_generation(embedded_model, tmp_path):
    """With an empty cache the probe job regenerates the trace (the same greedy text) and probes it
    on the KV cells generation left (fused). Those cells were decoded one token at a time, so the
    probes differ from a batched prefill's (docs/engine.md); the workflow's probe job always finds
    the generation cached and takes the exact path above."""
    from thinkbias.llm import open_engine

    spec, reqs, gens = _setup(embedded_model, "reasoning", tmp_path / "first")
    with open_engine(spec, tmp_path / "second", n_threads=2) as engine:
        table = probe_depths(engine, reqs, gens, "reasoning", spec.think_close, DEPTHS)
        assert engine.stats.generated_tokens == int(gens["completion_tokens"].sum())
    assert len(table) == len(gens) * len(DEPTHS)
    assert table[["p_A", "p_B", "p_C", "p_D"]].sum(axis=1).to_numpy() == pytest.approx(1.0)


def test_a_generation_from_elsewhere_stops_the_probe(embedded_model, tmp_path):
    from thinkbias.llm import open_engine

    spec, reqs, gens = _setup(embedded_model, "reasoning", tmp_path / "cache")
    gens.loc[1, "text"] = "something else"
    with open_engine(spec, tmp_path / "cache", n_threads=2) as engine:
        with pytest.raises(ValueError, match=r"differs from the generations table for 1 of 2 records \(first: mmlu:q1/1\)"):
            probe_depths(engine, reqs, gens, "reasoning", spec.think_close, DEPTHS)


def test_cues_and_depth_checks():
    assert depth_cue("reasoning", "</think>") == "\n</think>\n\nThe answer is ("
    assert depth_cue("reasoning", "") == "\n\nThe answer is ("
    assert depth_cue("cot", "</think>") == "\n\nThe answer is ("
    with pytest.raises(ValueError, match="mode 'direct'"):
        depth_cue("direct", "</think>")
    assert check_depths([0, 0.5, 1]) == [0.0, 0.5, 1.0]
    for bad in ([], [0.5, 0.25], [0, 1.5], [0.5, 0.5]):
        with pytest.raises(ValueError, match="depth_probe.depths"):
            check_depths(bad)
