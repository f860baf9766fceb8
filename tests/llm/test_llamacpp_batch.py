"""Batched multi-sequence generation (registry ``extra.n_parallel`` > 1) on the real embedded model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import pytest

from thinkbias.llm import open_engine
from thinkbias.llm.cache import RequestCache, cache_path
from thinkbias.llm.llamacpp import n_parallel
from thinkbias.llm.thinking import arm_prefill, thinking_instruction
from thinkbias.llm.types import YES_NO, ModelSpec, Request, Sampling

REPO = Path(__file__).resolve().parents[2]
QUESTION = "A 40-year-old works 50 hours a week as a manager. Does this person earn more than $50K a year?"
CUE = "\n</think>\n\nAnswer (Yes or No):"


def batched(spec, n: int = 4):
    return replace(spec, extra={**spec.extra, "n_parallel": n})


def think_request(spec, i: int, max_tokens: int = 32, **kw) -> Request:
    return Request.chat(
        f"{QUESTION} (case {i}) " + thinking_instruction(spec),
        prefill=arm_prefill(spec, "think"),
        sampling=Sampling(max_tokens=max_tokens, **kw),
    )


def mixed_requests(spec) -> list[Request]:
    """More requests than slots, with different budgets, stop strings and samplers."""
    reqs = [Request.chat(f"Count from {i} to {i + 30}.", sampling=Sampling(max_tokens=8 + 5 * i)) for i in range(5)]
    reqs.append(Request.chat("Write three short lines about rain.", sampling=Sampling(max_tokens=40, stop=(",", "\n"))))
    reqs.append(
        Request.chat("Tell a story about a fox.", sampling=Sampling(max_tokens=24, temperature=1.0, top_p=0.95, seed=7))
    )
    reqs.append(think_request(spec, 0, max_tokens=0))
    return reqs


@pytest.fixture(scope="module")
def batch_engine(spec):
    with open_engine(batched(spec), None, n_threads=1) as eng:
        yield eng


def test_n_parallel_must_be_a_positive_integer():
    base = ModelSpec(id="m", backend="llamacpp")
    assert n_parallel(base) == 1
    assert n_parallel(replace(base, extra={"n_parallel": 8})) == 8
    for bad in (0, -2, "4", 2.0, True):
        with pytest.raises(ValueError, match=r"model 'm': extra.n_parallel must be a positive integer"):
            n_parallel(replace(base, extra={"n_parallel": bad}))


def test_batched_outputs_are_valid_and_reproducible(batch_engine, fresh_engine, spec):
    reqs = mixed_requests(spec)
    order: list[int] = []
    gens = batch_engine.generate(reqs, on_result=lambda i, g: order.append(i))
    assert sorted(order) == list(range(len(reqs)))
    assert order != list(range(len(reqs)))  # continuous: short requests finish before long ones started earlier
    for req, g in zip(reqs, gens):
        assert not g.cached and g.completion_tokens <= req.sampling.max_tokens
        assert g.finish_reason in ("stop", "length")
        if g.finish_reason == "length":
            assert g.completion_tokens == req.sampling.max_tokens
        for s in req.sampling.stop:
            assert s not in g.text
    assert gens[5].finish_reason == "stop" and gens[5].text  # cut at its stop string
    assert gens[-1].completion_tokens == 0 and gens[-1].text == ""
    assert batch_engine.stats.generated_tokens == sum(g.completion_tokens for g in gens)
    # the same batch again on another batched engine: identical, the sampled one included
    with open_engine(batched(spec), None, n_threads=1) as again:
        assert [g.text for g in again.generate(reqs)] == [g.text for g in gens]
    # against sequential decoding: numerically equivalent, so nearly every greedy text is the same
    seq = fresh_engine().generate(reqs)
    same = sum(a.text == b.text for a, b in zip(seq, gens))
    assert same >= len(reqs) - 2, [(a.text, b.text) for a, b in zip(seq, gens)]


def test_batched_probes_equal_sequential_probes_of_the_same_tokens(spec, fresh_engine):
    """Each sequence is probed on its own KV cells (truncated per seq_id, deepest cut first): the
    sequential engine, given the same generated tokens the same way, gives the same probes."""
    made: list[tuple] = []
    with open_engine(batched(spec, 3), None, n_threads=1) as eng:
        real = eng.fused_probes

        def recording(rendered, prompt, tokens, pieces, text, *args, **kw):  # the real probes, arguments kept
            out = real(rendered, prompt, tokens, pieces, text, *args, **kw)
            made.append((prompt, list(tokens), text, out))
            return out

        eng.fused_probes = recording
        reqs = [think_request(spec, i, max_tokens=24 + 8 * i) for i in range(5)]
        fracs = [0.0, 0.25, 0.5, 1.0]
        results = eng.generate_and_probe_many(reqs, fracs, CUE, YES_NO)
    assert len(made) == len(reqs) and all(len(s) == len(fracs) for _, s in results)
    by_text = {text: (prompt, tokens) for prompt, tokens, text, _ in made}
    ref = fresh_engine()
    # traces long enough to probe at distinct depths (where a trace ends on EOS depends on the CPU
    # kernels: one stopped at 9 tokens on one build, so the length is asked of the longest)
    assert max(len(tokens) for _, tokens, _, _ in made) > 10
    for req, (gen, scores) in zip(reqs, results):
        prompt, tokens = by_text[gen.text]
        assert len(tokens) == gen.completion_tokens >= len(fracs)
        # sequentially: the prompt in one batch, the trace decoded token by token as generation leaves
        # it (all but a last sampled token that ended the budget), then the fused probes on that cache
        ref.eval_fresh(prompt)
        for t in tokens[: len(tokens) - (gen.finish_reason == "length")]:
            ref.llm.eval([t])
        want = ref.fused_probes(
            ref.render(req), prompt, tokens, [ref.token_piece(t) for t in tokens], gen.text, fracs, CUE, YES_NO
        )
        for got, w in zip(scores, want):
            assert got.probs["Yes"] == pytest.approx(w.probs["Yes"], abs=1e-6)
            assert got.outside_mass == pytest.approx(w.outside_mass, abs=1e-6)


def test_batched_rerun_is_served_from_the_cache(spec, tmp_path):
    reqs = [think_request(spec, i, max_tokens=12) for i in range(6)]
    with open_engine(batched(spec), tmp_path, n_threads=1) as eng:
        first = eng.generate_and_probe_many(reqs, [0.0, 1.0], CUE, YES_NO)
        plain = eng.generate(reqs)  # the generations generate_and_probe_many stored
        assert eng.stats.cache_hits == len(reqs) and all(g.cached for g in plain)
    with open_engine(batched(spec), tmp_path, n_threads=1) as again:
        second = again.generate_and_probe_many(reqs, [0.0, 1.0], CUE, YES_NO)
        assert again.stats.generated_tokens == 0 and again.stats.prompt_tokens == 0
        assert again.stats.cache_hits == 2 * len(reqs)  # a generation and its probes each
    assert [(g.text, [s.probs for s in sc]) for g, sc in first] == [(g.text, [s.probs for s in sc]) for g, sc in second]


KILL_SCRIPT = textwrap.dedent("""
    import json, sys
    from dataclasses import replace
    from thinkbias.llm import load_model_spec, open_engine
    from thinkbias.llm.types import YES_NO, Request, Sampling
    spec = load_model_spec(sys.argv[1], "smollm2-135m", weights=sys.argv[2])
    spec = replace(spec, extra={**spec.extra, "n_parallel": 4})
    reqs = [Request.chat(f"Count from {i} to {i + 30}.", prefill="<think>\\n",
                         sampling=Sampling(max_tokens=24 + 4 * (i % 5))) for i in range(int(sys.argv[4]))]
    with open_engine(spec, sys.argv[3], n_threads=1) as eng:
        out = eng.generate_and_probe_many(reqs, [0.0, 1.0], "\\nAnswer:", YES_NO)
        print(json.dumps({"requests": eng.stats.requests, "generated": eng.stats.generated_tokens,
                          "taken_over": eng.stats.taken_over, "texts": [g.text for g, _ in out]}))
""")


def test_killed_batched_job_resumes_paying_only_for_unfinished(spec, tmp_path):
    n = 12
    args = [sys.executable, "-c", KILL_SCRIPT, str(REPO / "config/models.yaml"), spec.weights, str(tmp_path), str(n)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    db = cache_path(tmp_path, spec.id)
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        if db.exists() and RequestCache(db).count("gen") >= 3:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the job finished before it could be killed"
    cache = RequestCache(db)
    finished = cache.count("gen")
    assert 3 <= finished < n and cache.count("probe") == finished  # each stored with its probes as it finished
    cache.close()
    rerun = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    report = json.loads(rerun.stdout.strip().splitlines()[-1])
    assert report["requests"] == 2 * (n - finished)  # a generation and its probes each, only for the unfinished
    assert report["taken_over"] == n - finished  # the killed job's leases, taken over at once
    assert RequestCache(db).count("gen") == n
    # a second rerun pays for nothing
    third = json.loads(
        subprocess.run(args, env=env, capture_output=True, text=True, timeout=600).stdout.splitlines()[-1]
    )
    assert third["requests"] == 0 and third["generated"] == 0 and third["texts"] == report["texts"]


def test_shared_prompt_prefix_is_copied_not_prefilled(batch_engine, spec):
    """A prompt sharing its leading tokens with a running sequence's prompt gets them by a copy of
    that sequence's KV stream: only the rest is prefilled, and its next-token logits (the greedy
    pick taken from them by argmax, as llama.cpp's greedy sampler picks) are those of a full prefill."""
    import numpy as np

    from thinkbias.llm.llamacpp_batch import MIN_SHARED_PREFIX, InFlight
    from thinkbias.llm.token_stream import TokenStream

    dec = batch_engine.batched
    reqs = [Request.chat(f"{QUESTION} Answer for person {name}.") for name in ("Ada", "Bo")]
    rendered = [batch_engine.render(r) for r in reqs]
    prompts = [batch_engine.tokenize_prompt(r) for r in rendered]
    first = InFlight(0, 0, reqs[0], rendered[0], prompts[0], None, TokenStream(()))
    second = InFlight(1, 1, reqs[1], rendered[1], prompts[1], None, TokenStream(()))
    try:
        dec._extend(first, prompts[0])
        dec._share_prefix(second, [first])
        shared = len(second.cells)
        assert MIN_SHARED_PREFIX <= shared < len(prompts[1]) and second.cells == prompts[1][:shared]
        dec._extend(second, prompts[1][shared:])
        after_copy = dec.logits_after(second, prompts[1])
        dec._clear(1)
        second.cells = []
        dec._extend(second, prompts[1])
        full = dec.logits_after(second, prompts[1])
        greedy = batch_engine._sampler(Sampling()).sample(dec.ctx, -1)
    finally:
        dec._clear(0)
        dec._clear(1)
    assert np.allclose(after_copy, full, rtol=0, atol=1e-4)
    assert int(np.argmax(full)) == greedy
    # a sequence with no long enough shared prefix is prefilled whole
    lone = InFlight(2, 2, reqs[0], "", [prompts[0][0]] + [t + 1 for t in prompts[0][1:]], None, TokenStream(()))
    dec._share_prefix(lone, [first])
    assert lone.cells == []


def _count_decodes(engine) -> list[int]:
    """Wrap the batched decoder's ``llama_decode`` calls: the list gets each call's number of sequences."""
    dec, calls = engine.batched, []
    real = dec._decode

    def counting(entries):
        calls.append(len({seq_id for _, _, seq_id, _ in entries}))
        return real(entries)

    dec._decode = counting
    return calls


def test_scores_and_probes_of_many_requests_share_decode_calls(spec, fresh_engine):
    """``score_many`` and ``probe_many`` on a batched engine evaluate several requests' prompts in
    the same ``llama_decode`` calls (one sequence each); the results equal the sequential engine's
    single ``score`` / ``probe`` calls bit for bit (with sequences of unequal remainders mixed in one
    call they did not: up to 0.01 apart), and a second call is served from the cache."""
    reqs = [Request.chat(f"{QUESTION} (case {i})", prefill="Answer:") for i in range(5)]
    traces = [f" The person is {40 + i} and works long hours, so" for i in range(5)]
    cuts = [[0, 3, 9], [9, 0], [5], [0], [2, 6]]
    ref = fresh_engine()
    with open_engine(batched(spec, 3), None, n_threads=1) as eng:
        calls = _count_decodes(eng)
        scores = eng.score_many(reqs, YES_NO)
        n_score_calls = len(calls)
        probes = eng.probe_many(list(zip(reqs, traces, cuts)), CUE, YES_NO)
        n_probe_calls = len(calls) - n_score_calls
        before = (eng.stats.prompt_tokens, eng.stats.cache_hits)
        assert eng.score_many(reqs, YES_NO) == scores
        assert eng.probe_many(list(zip(reqs, traces, cuts)), CUE, YES_NO) == probes
        assert eng.stats.prompt_tokens == before[0] and eng.stats.cache_hits == before[1] + 10
    assert calls[:n_score_calls] == [3, 2]  # 5 prompts of one length on 3 slots: two decodes
    # 11 evaluations (one per distinct cut) in fewer decodes, several sequences in some of them
    probe_calls = calls[n_score_calls:]
    assert len(probe_calls) == n_probe_calls < sum(len(set(c)) for c in cuts) and max(probe_calls) > 1
    # several sequences in one decode give each one's numbers bit for bit
    assert scores == [ref.score(req, YES_NO) for req in reqs]
    for req, trace, cs, got in zip(reqs, traces, cuts, probes):
        want = ref.probe(req, trace, cs, CUE, YES_NO)
        assert len(got) == len(cs)
        assert got == want  # bit for bit


def test_generate_and_score_many_scores_on_each_sequences_cells(spec, fresh_engine):
    """Batched ``generate_and_score_many``: each score (the prompt + a cue) is read on its own
    sequence's cells before the slot is freed, so only the cue is evaluated; the generations are
    the sequential engine's, the scores equal its within float tolerance, and a rerun is all cache."""
    cue = "\nAnswer (Yes or No):"
    reqs = [Request.chat(f"{QUESTION} (case {i})", sampling=Sampling(max_tokens=6 + i)) for i in range(5)]
    score_reqs = [Request.chat(r.messages[-1][1], prefill=cue) for r in reqs]
    seq_pairs = fresh_engine().generate_and_score_many(reqs, score_reqs, YES_NO)
    with open_engine(batched(spec, 3), None, n_threads=1) as eng:
        n_cue = eng.count_tokens(cue)
        spent: list[int] = []
        last = [eng.stats.probe_tokens]

        def took(i, g):
            spent.append(eng.stats.probe_tokens - last[0])
            last[0] = eng.stats.probe_tokens

        pairs = eng.generate_and_score_many(reqs, score_reqs, YES_NO, on_result=took)
        again = eng.generate_and_score_many(reqs, score_reqs, YES_NO)
        assert eng.stats.generated_tokens == sum(g.completion_tokens for g, _ in pairs)
    assert len(spent) == len(reqs) and all(0 < n <= n_cue + 1 for n in spent), (spent, n_cue)
    assert [g.text for g, _ in pairs] == [g.text for g, _ in seq_pairs]
    for (_, s), (_, w) in zip(pairs, seq_pairs):
        assert abs(s.probs["Yes"] - w.probs["Yes"]) < 1e-4
    assert [s for _, s in again] == [s for _, s in pairs] and all(g.cached for g, _ in again)


def test_probes_of_cached_traces_run_together(spec, fresh_engine):
    """``generate_and_probe_many`` over generations cached without these probes (new depths, e.g.
    a depth probe switched on after a run) probes the stored traces with ``probe_many``: nothing is
    generated, the traces share decode calls, and the probes equal, bit for bit, the sequential
    engine's, which probes each stored trace on its own."""
    reqs = [think_request(spec, i, max_tokens=16 + 4 * i) for i in range(4)]
    ref = fresh_engine()
    with open_engine(batched(spec, 4), None, n_threads=1) as eng:
        eng.generate(reqs)
        ref.generate(reqs)
        calls = _count_decodes(eng)
        before = eng.stats.generated_tokens
        got = eng.generate_and_probe_many(reqs, [0.0, 0.5, 1.0], CUE, YES_NO)
        assert eng.stats.generated_tokens == before
    # 12 evaluations (4 traces x 3 cuts) in fewer decodes: the prefills (of unequal lengths) one by
    # one, the cue rounds of equal remainders together
    assert len(calls) < 12 and max(calls) > 1, calls
    want = ref.generate_and_probe_many(reqs, [0.0, 0.5, 1.0], CUE, YES_NO)
    for (g, scores), (wg, wscores) in zip(got, want):
        assert g.text == wg.text and len(scores) == 3
        assert scores == wscores  # bit for bit
