"""The llama.cpp backend on the real embedded model (SmolLM2-135M, CPU)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from thinkbias.llm.cache import RequestCache, cache_path
from thinkbias.llm.candidates import scores_from_logits
from thinkbias.llm.thinking import arm_prefill, thinking_instruction, thinking_token_span
from thinkbias.llm.trace_cuts import fraction_cuts
from thinkbias.llm.types import LETTERS, YES_NO, Request, Sampling

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
QUESTION = "A 40-year-old works 50 hours a week as a manager. Does this person earn more than $50K a year?"
CUE = "\n</think>\n\nAnswer (Yes or No):"


def think_request(spec, max_tokens=40, **kw):
    return Request.chat(
        QUESTION + " " + thinking_instruction(spec),
        prefill=arm_prefill(spec, "think"),
        sampling=Sampling(max_tokens=max_tokens, **kw),
    )


def test_render_uses_gguf_chatml_template_and_prefill(engine, spec):
    text = engine.render(think_request(spec))
    assert text.startswith("<|im_start|>system\n")
    assert text.endswith("<|im_end|>\n<|im_start|>assistant\n<think>\n")
    toks = engine.tokenize_prompt(text)
    assert toks[0] == engine.llm.tokenize(b"<|im_start|>", add_bos=False, special=True)[0]


def test_greedy_identical_across_runs_and_orders(fresh_engine, spec):
    a = think_request(spec, max_tokens=24)
    b = Request.chat("Name a colour.", sampling=Sampling(max_tokens=12))
    first = fresh_engine().generate([a, b])
    second = fresh_engine().generate([b, a])
    assert first[0].text == second[1].text and first[1].text == second[0].text
    assert first[0].completion_tokens == 24 and first[0].finish_reason == "length"
    assert not first[0].cached and first[0].thinking  # open think block, no close: all thinking


def test_sampled_output_depends_only_on_seed(fresh_engine, spec):
    reqs = [think_request(spec, max_tokens=16, temperature=1.0, top_p=0.95, seed=s) for s in (1, 1, 2)]
    eng = fresh_engine()
    g1 = eng.generate(reqs[:1])[0]
    g3 = eng.generate(reqs[2:])[0]
    g1_again = fresh_engine().generate([reqs[2], reqs[1]])[1]
    assert g1.text == g1_again.text
    assert g1.text != g3.text


def test_stop_strings_cut_the_text(engine, spec):
    g = engine.generate(
        [Request.chat("Write three short lines about rain.", sampling=Sampling(max_tokens=40, stop=(",", "\n")))]
    )[0]
    assert g.finish_reason == "stop" and g.completion_tokens < 40
    assert "," not in g.text and "\n" not in g.text and g.text


def test_score_normalised_and_matches_independent_softmax(engine, spec):
    req = Request.chat(QUESTION, prefill=arm_prefill(spec, "nothink") + "Answer (Yes or No):")
    s = engine.score(req, YES_NO)
    assert set(s.probs) == {"Yes", "No"}
    assert sum(s.probs.values()) == pytest.approx(1.0, abs=1e-12)
    assert 0.0 <= s.outside_mass < 1.0
    # independent: llama-cpp-python's own full-logits path (logits_all) on the same tokens
    from llama_cpp import Llama  # the engine fixture loaded the CPU backend

    ref = Llama(spec.weights, n_ctx=512, logits_all=True, verbose=False, n_threads=1)
    toks = engine.tokenize_prompt(engine.render(req))
    ref.eval(toks)
    expected = scores_from_logits(ref.scores[len(toks) - 1], engine.candidate_ids(YES_NO))
    ref.close()
    assert s.probs["Yes"] == pytest.approx(expected.probs["Yes"], abs=1e-3)
    letters = engine.score(Request.chat("Which letter comes first? A) B B) A", prefill="Answer: ("), LETTERS)
    assert set(letters.probs) == set("ABCD") and sum(letters.probs.values()) == pytest.approx(1.0)


def test_probe_full_cut_equals_score_after_full_trace(engine, spec):
    req = Request.chat(QUESTION, prefill=arm_prefill(spec, "think"))
    trace = "The person is a manager. Managers often earn well. Fifty hours is a lot of work."
    n = engine.count_tokens(trace)
    probes = engine.probe(req, trace, [n, 0, n // 2], CUE, YES_NO)
    full = engine.score(Request.chat(QUESTION, prefill=arm_prefill(spec, "think") + trace + CUE), YES_NO)
    assert probes[0].probs["Yes"] == pytest.approx(full.probs["Yes"], abs=2e-3)
    assert probes[0].outside_mass == pytest.approx(full.outside_mass, abs=2e-3)
    # cut 0 = the empty-trace prefix, computed on its own
    empty = engine.score(Request.chat(QUESTION, prefill=arm_prefill(spec, "think") + CUE), YES_NO)
    assert probes[1].probs["Yes"] == pytest.approx(empty.probs["Yes"], abs=2e-3)
    for p in probes:
        assert sum(p.probs.values()) == pytest.approx(1.0)


def test_fused_probes_equal_the_same_forward_passes_without_kv_truncation(fresh_engine, spec):
    eng = fresh_engine()
    req = think_request(spec, max_tokens=48)
    fracs = [0.0, 0.25, 0.5, 1.0]
    gen, fused = eng.generate_and_probe(req, fracs, CUE, YES_NO)
    # independent: regenerate the same tokens, then per cut rebuild the KV cache from scratch the way
    # generation built it (prompt batch, trace token by token) and feed the cue: no truncation involved
    prompt = eng.tokenize_prompt(eng.render(req))
    tokens, pieces, text, _ = eng.generate_tokens(prompt, req.sampling)
    assert text == gen.text
    k0, k1 = thinking_token_span(text, pieces, spec.think_open, spec.think_close, True)
    assert k1 - k0 > 10
    cue = eng.tokenize_text(CUE)
    ids = eng.candidate_ids(YES_NO)
    for f, got in zip(fracs, fused):
        cut = fraction_cuts([f], k1 - k0)[0]
        eng.eval_fresh(prompt)
        for t in tokens[: k0 + cut]:
            eng.llm.eval([t])
        eng.llm.eval(cue)
        want = scores_from_logits(eng.last_logits(), ids)
        assert got.probs["Yes"] == pytest.approx(want.probs["Yes"], abs=1e-9)
        assert got.outside_mass == pytest.approx(want.outside_mass, abs=1e-9)
        # a fresh batched prefill of the same prefix differs only by llama.cpp's batch-size numerics
        eng.eval_fresh(prompt + tokens[: k0 + cut] + cue)
        assert got.probs["Yes"] == pytest.approx(scores_from_logits(eng.last_logits(), ids).probs["Yes"], abs=0.1)
    # the cached rerun returns the same without generating
    before = eng.stats.generated_tokens
    gen2, fused2 = eng.generate_and_probe(req, fracs, CUE, YES_NO)
    assert gen2.cached and eng.stats.generated_tokens == before
    assert [s.probs for s in fused2] == [s.probs for s in fused]
    # a cached generation without cached probes is probed from its text (no generation)
    other = eng.generate_and_probe(req, [0.0, 1.0], CUE, YES_NO)[1]
    assert eng.stats.generated_tokens == before and len(other) == 2


def test_cache_hit_rerun_generates_zero_tokens(fresh_engine, spec, tmp_path):
    reqs = [think_request(spec, max_tokens=12), Request.chat("Hello!", sampling=Sampling(max_tokens=8))]
    eng = fresh_engine(tmp_path)
    first = eng.generate(reqs)
    score = eng.score(reqs[1], YES_NO)
    eng.close()
    again = fresh_engine(tmp_path)
    second = again.generate(reqs)
    assert again.stats.generated_tokens == 0 and again.stats.prompt_tokens == 0
    assert all(g.cached for g in second) and [g.text for g in second] == [g.text for g in first]
    assert again.score(reqs[1], YES_NO) == score and again.stats.prompt_tokens == 0


KILL_SCRIPT = textwrap.dedent("""
    import json, sys
    from thinkbias.llm import load_model_spec, open_engine
    from thinkbias.llm.types import Request, Sampling
    spec = load_model_spec(sys.argv[1], "smollm2-135m", weights=sys.argv[2])
    reqs = [
        Request.chat(f"Count from {i} to {i + 30}.", sampling=Sampling(max_tokens=40)) for i in range(int(sys.argv[4]))
    ]
    with open_engine(spec, sys.argv[3], n_threads=1) as eng:
        out = eng.generate(reqs)
        print(json.dumps({"requests": eng.stats.requests, "hits": eng.stats.cache_hits,
                          "texts": [g.text for g in out]}))
""")


def test_killed_job_resumes_paying_only_for_unfinished(spec, tmp_path):
    n = 8
    args = [sys.executable, "-c", KILL_SCRIPT, str(REPO / "config/models.yaml"), spec.weights, str(tmp_path), str(n)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    db = cache_path(tmp_path, spec.id)
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 90
    done = 0
    while time.time() < deadline and proc.poll() is None:
        if db.exists():
            done = RequestCache(db).count("gen")
            if done >= 3:
                break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the job finished before it could be killed"
    finished = RequestCache(db).count("gen")
    assert 3 <= finished < n
    rerun = subprocess.run(args, env=env, capture_output=True, text=True, timeout=180)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    import json

    report = json.loads(rerun.stdout.strip().splitlines()[-1])
    assert report["hits"] == finished and report["requests"] == n - finished
    assert RequestCache(db).count("gen") == n


def test_thread_count_cap(monkeypatch):
    from thinkbias.llm.llamacpp import default_threads, effective_threads

    monkeypatch.delenv("THINKBIAS_THREADS", raising=False)
    assert effective_threads(1, {}) == 1
    assert effective_threads(10_000, {}) == default_threads()
    assert effective_threads(None, {"n_threads": 1}) == 1
    monkeypatch.setenv("THINKBIAS_THREADS", "1")
    assert effective_threads(8, {"n_threads": 4}) == 1


def test_json_schema_constrains_output(engine):
    import json

    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string", "enum": ["Yes", "No"]}},
        "required": ["answer"],
    }
    g = engine.generate(
        [Request.chat("Is the sky blue? Reply in JSON.", sampling=Sampling(max_tokens=40, json_schema=schema))]
    )[0]
    assert json.loads(g.text)["answer"] in ("Yes", "No")


def test_probe_rejects_cuts_outside_the_trace(engine):
    with pytest.raises(ValueError, match="outside"):
        engine.probe(Request.chat("Q"), "short trace", [999], CUE, YES_NO)


def test_generate_and_probe_many_matches_single_calls(fresh_engine, spec):
    eng = fresh_engine()
    reqs = [
        think_request(spec, max_tokens=16),
        Request.chat(QUESTION, prefill=arm_prefill(spec, "nothink"), sampling=Sampling(max_tokens=8)),
    ]
    many = eng.generate_and_probe_many(reqs, [0.0, 1.0], CUE, YES_NO)
    other = fresh_engine()
    for req, (gen, scores) in zip(reqs, many):
        g1, s1 = other.generate_and_probe(req, [0.0, 1.0], CUE, YES_NO)
        assert g1.text == gen.text and [s.probs for s in s1] == [s.probs for s in scores]


def test_later_probes_and_scores_reuse_the_batched_prefix_and_equal_cold_calls(fresh_engine, spec):
    """A probe or score after a call that left the same prompt in the KV cache evaluates only the new
    tokens, and gives exactly what an engine with an empty cache gives: decoded cells are not reused."""
    warm, cold = fresh_engine(), fresh_engine()
    req = think_request(spec, max_tokens=24)
    gen = warm.generate([req])[0]  # KV: prompt (batched) + trace (decoded token by token)
    n = warm.count_tokens(gen.thinking)
    cue = len(warm.tokenize_text(CUE))
    cuts = [0, n // 2, n]
    before = warm.stats.prompt_tokens
    got = warm.probe(req, gen.thinking, cuts, CUE, YES_NO)
    assert warm.stats.prompt_tokens - before == n + len(cuts) * cue  # the prompt was not re-read
    want = cold.probe(req, gen.thinking, cuts, CUE, YES_NO)
    assert [s.probs for s in got] == [s.probs for s in want]
    assert [s.outside_mass for s in got] == [s.outside_mass for s in want]
    # a second probe of the same prompt (other cuts; the first left prompt + cue): the prompt is kept
    before = warm.stats.prompt_tokens
    got2 = warm.probe(req, gen.thinking, [n - 1, 1], CUE, YES_NO)
    assert warm.stats.prompt_tokens - before == n - 1 + 2 * cue
    assert [s.probs for s in got2] == [s.probs for s in cold.probe(req, gen.thinking, [n - 1, 1], CUE, YES_NO)]
    # a score right after generating from the same prompt: only the appended answer cue is read
    nothink = Request.chat(QUESTION, prefill=arm_prefill(spec, "nothink"), sampling=Sampling(max_tokens=6))
    g2 = warm.generate([nothink])[0]
    scored = Request.chat(QUESTION, prefill=arm_prefill(spec, "nothink") + "Answer:")
    before = warm.stats.prompt_tokens
    s = warm.score(scored, YES_NO)
    assert 0 < warm.stats.prompt_tokens - before <= len(warm.tokenize_text("Answer:")) + 2 < g2.prompt_tokens
    assert s.probs == cold.score(scored, YES_NO).probs


def test_the_gguf_tokenizer_gives_back_the_round_trip_text(engine):
    """The text every load checks (``thinkbias.llm.tokenizer_check``) survives the GGUF's tokenizer, token
    by token: spaces, a tab, digits, the think tags, non-ASCII."""
    from thinkbias.llm.tokenizer_check import round_trip_text

    text = round_trip_text(engine.spec.think_open, engine.spec.think_close)
    tokens = engine.tokenize_text(text)
    assert len(tokens) > 40 and engine.detokenize_text(tokens) == text
