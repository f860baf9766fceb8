"""Depth probe on the embedded model: the fused probes of the generation job and the probe job's
probes of cached traces, each against separate ``probe`` calls on the same tokens."""

import pandas as pd
import pytest

from thinkbias.llm.trace_cuts import fraction_cuts, trace_lead
from thinkbias.llm.types import LETTERS
from thinkbias.position.depth_probe import (
    PROBE_COLUMNS,
    check_depths,
    depth_cue,
    depth_probe_table,
    depth_trace,
    generate_and_probe_depths,
    probe_depths,
)
from thinkbias.position.generation import build_requests, generations_table
from thinkbias.position.items import OPTION_COLUMNS

DEPTHS = [0.0, 0.5, 1.0]


def _prompts() -> pd.DataFrame:
    options = ["Paris", "Rome", "Madrid", "Berlin"]
    rows = []
    for s in range(2):
        shown = [options[(j - s) % 4] for j in range(4)]
        rows.append(
            {
                "question_id": "mmlu:q1",
                "benchmark": "mmlu",
                "item_id": "q1",
                "permutation": s,
                "question": "What is the capital of France?",
                **dict(zip(OPTION_COLUMNS, shown)),
                "correct_position": "ABCD"[s],
            }
        )
    return pd.DataFrame(rows)


def _setup(embedded_model, mode, cache_dir):
    from thinkbias.llm import load_model_spec, open_engine
    from thinkbias.llm.thinking import arm_prefill, thinking_instruction

    spec = load_model_spec("config/models.yaml", "smollm2-135m", weights=str(embedded_model))
    prompts = _prompts()
    think = arm_prefill(spec, "think") if mode == "reasoning" else ""
    reqs = build_requests(prompts, mode, think, arm_prefill(spec, "nothink"), thinking_instruction(spec), 20)
    with open_engine(spec, cache_dir, n_threads=1) as engine:
        gens = generations_table(prompts, "smollm2-135m", mode, reqs, engine.generate(reqs))
    return spec, reqs, gens


def _stored_trace(engine, req, gen, mode: str) -> tuple[str, int]:
    """The text a stored trace is probed as, and the tokens before the trace proper: in reasoning
    mode the newlines the model wrote after the prompt's open tag (which the stored thinking trace
    does not keep) come first, as generated; in CoT mode the whole generated text."""
    if mode != "reasoning":
        return gen.text, 0
    lead = trace_lead(gen.text, engine.spec.think_open, engine.spec.think_close, engine._opened(engine.render(req)))
    assert lead.strip("\n") == ""  # the prompt opened the trace: only newlines lead to it
    return lead + gen.thinking, engine.count_tokens(lead) if lead else 0


def _separate_probes(spec, reqs, gens, mode, table):
    """Each (record, depth) again through one ``probe`` call with one cut, on an engine without cache."""
    from thinkbias.llm import open_engine

    cue = depth_cue(mode, spec.think_close)
    with open_engine(spec, None, n_threads=1) as engine:
        for i, (req, g) in enumerate(zip(reqs, gens.itertuples(index=False))):
            trace = g.thinking if mode == "reasoning" else g.text
            n = engine.count_tokens(trace)
            assert n > 0
            got = table[table["permutation"] == g.permutation].sort_values("depth")
            assert list(got["cut_tokens"]) == fraction_cuts(DEPTHS, n) and (got["trace_tokens"] == n).all()
            text, skip = _stored_trace(engine, req, g, mode)
            for cut, row in zip(fraction_cuts(DEPTHS, n), got.itertuples(index=False)):
                sc = engine.probe(req, text, [skip + cut], cue, LETTERS)[0]
                yield row, sc


@pytest.mark.parametrize("mode", ["reasoning", "cot"])
def test_depth_probes_equal_separate_probe_calls(embedded_model, tmp_path, mode):
    from thinkbias.llm import open_engine

    spec, reqs, gens = _setup(embedded_model, mode, tmp_path / "cache")
    with open_engine(spec, tmp_path / "cache", n_threads=1) as engine:  # the generations are cached
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


# Fused probes read the KV cells generation decoded one token at a time; a batched prefill of the same
# token ids gives slightly different logits (float accumulation in another order). Measured on the
# embedded model (8 MMLU records per mode, 64-token traces, 5 depths; every record with the same
# token ids and cuts both ways): at most 0.044 in reasoning and 0.071 in CoT mode (medians 0.014,
# 0.015) in P(letter), the same against a batched prefill of the ids as against Engine.probe. Before
# the fused span and the stored trace were made to agree, they differed by up to 0.53 (the fused cuts
# counted the newline after the open tag as a trace token). The tolerance is the largest measured
# float spread with room for other records and CPUs' kernels, well below the 0.53 of a one-token shift.
FUSED_TOLERANCE = 0.1


@pytest.mark.parametrize("mode", ["reasoning", "cot"])
def test_fused_probes_match_probe_calls_on_the_same_tokens(embedded_model, tmp_path, mode):
    """The generation job's fused probes against ``Engine.probe`` on a second engine: the same
    generated token ids (the stored trace re-tokenises to them, the prompt + lead to the prompt and
    the tokens before the trace), cut at the same token counts."""
    from thinkbias.llm import load_model_spec, open_engine
    from thinkbias.llm.thinking import arm_prefill, thinking_instruction, thinking_token_span

    spec = load_model_spec("config/models.yaml", "smollm2-135m", weights=str(embedded_model))
    prompts = _prompts()
    think = arm_prefill(spec, "think") if mode == "reasoning" else ""
    reqs = build_requests(prompts, mode, think, arm_prefill(spec, "nothink"), thinking_instruction(spec), 20)
    cue = depth_cue(mode, spec.think_close)
    with open_engine(spec, tmp_path / "cache", n_threads=1) as engine:
        pairs = generate_and_probe_depths(engine, reqs, mode, spec.think_close, DEPTHS)
        generated = engine.stats.generated_tokens
        table = depth_probe_table(
            engine, generations_table(prompts, spec.id, mode, reqs, [g for g, _ in pairs]), pairs, mode, DEPTHS
        )
    assert generated > 0 and len(table) == len(reqs) * len(DEPTHS)
    worst, compared = 0.0, 0
    with open_engine(spec, None, n_threads=1) as ref:
        for permutation, req, (gen, fused) in zip(prompts["permutation"], reqs, pairs):
            rendered = ref.render(req)
            prompt = ref.tokenize_prompt(rendered)
            tokens, pieces, text, _ = ref.generate_tokens(prompt, req.sampling)
            assert text == gen.text  # greedy: the same generation
            k0, k1 = thinking_token_span(
                text, pieces, spec.think_open, spec.think_close, ref._opened(rendered), depth_trace(mode)
            )
            stored, skip = _stored_trace(ref, req, gen, mode)
            assert skip == k0 and ref.tokenize_text(stored, special=False) == tokens[:k1]  # the same token ids
            cuts = fraction_cuts(DEPTHS, k1 - k0)  # the fused cuts: the same token counts as the table's
            assert list(table[table["permutation"] == permutation].sort_values("depth")["cut_tokens"]) == cuts
            separate = ref.probe(req, stored, [skip + c for c in cuts], cue, LETTERS)
            for f, s in zip(fused, separate, strict=True):
                worst = max(worst, max(abs(f.probs[c] - s.probs[c]) for c in "ABCD"))
                compared += 1
    assert compared == len(reqs) * len(DEPTHS)
    assert worst <= FUSED_TOLERANCE, f"fused probes differ from probe calls on the same tokens by {worst:.4f}"
    assert table[["p_A", "p_B", "p_C", "p_D"]].sum(axis=1).to_numpy() == pytest.approx(1.0)


def test_a_generation_from_elsewhere_stops_the_probe(embedded_model, tmp_path):
    from thinkbias.llm import open_engine

    spec, reqs, gens = _setup(embedded_model, "reasoning", tmp_path / "cache")
    gens.loc[1, "text"] = "something else"
    with open_engine(spec, tmp_path / "cache", n_threads=1) as engine:
        with pytest.raises(
            ValueError, match=r"differs from the generations table for 1 of 2 records \(first: mmlu:q1/1\)"
        ):
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
