"""An end-to-end check of one engine: generate (both arms), a JSON-schema constrained reply, score
Yes/No, probe prefixes, fused generate-and-probe, cache hits; with throughput. Used by the GPU smoke
scripts (scripts/gpu/) and tested here on the embedded CPU model."""

from __future__ import annotations

import json
import math
import time

from thinkbias.llm.probe_waves import probe_cache_share
from thinkbias.llm.thinking import arm_prefill, thinking_instruction
from thinkbias.llm.types import YES_NO, Engine, Request, Sampling

QUESTION = (
    "A 45-year-old software engineer works 40 hours a week and holds a master's degree. "
    "Does this person earn more than $50K a year? Answer Yes or No."
)
CUE_ANSWER = "Answer:"
ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "enum": ["Yes", "No"]}},
    "required": ["answer"],
}


def run_smoke(engine: Engine, max_tokens: int = 128, n_requests: int = 8) -> dict:
    """Run the checks and return measured numbers; raises ``AssertionError`` on a failed check."""
    spec = engine.spec
    think = spec.thinking != "none"
    user = QUESTION + (" " + thinking_instruction(spec) if thinking_instruction(spec) else "")
    arm = "think" if think else "nothink"
    reqs = [
        Request.chat(
            user + f" (case {i})",
            prefill=arm_prefill(spec, arm),
            sampling=Sampling(max_tokens=max_tokens, temperature=0.6 if i % 2 else 0.0, seed=i),
        )
        for i in range(n_requests)
    ]
    t = time.perf_counter()
    gens = engine.generate(reqs)
    gen_s = time.perf_counter() - t
    tokens = sum(g.completion_tokens for g in gens)
    again = engine.generate(reqs)
    assert all(g.cached for g in again), "rerun was not served from the cache"
    nothink = Request.chat(QUESTION, prefill=arm_prefill(spec, "nothink") + CUE_ANSWER)
    s = engine.score(nothink, YES_NO)
    assert math.isclose(sum(s.probs.values()), 1.0, abs_tol=1e-6), s
    out = {
        "generate_s": gen_s,
        "tokens": tokens,
        "tokens_per_s": tokens / gen_s,
        "p_yes_nothink": s.probs["Yes"],
        "outside_mass_nothink": s.outside_mass,
    }
    constrained = Request.chat(
        QUESTION + " Reply in JSON.",
        prefill=arm_prefill(spec, "nothink"),
        sampling=Sampling(max_tokens=24, json_schema=ANSWER_SCHEMA),
    )
    [reply] = engine.generate([constrained])
    out["json_answer"] = json.loads(reply.answer)["answer"]  # a failed constraint raises here
    if think:
        cue = "\n" + spec.think_close + "\n\n" + CUE_ANSWER
        trace = gens[0].thinking or gens[0].text
        n = engine.count_tokens(trace)
        cuts = [n, n // 2, 0]
        t = time.perf_counter()
        probes = engine.probe(reqs[0], trace, cuts, cue, YES_NO)
        out["probe_s"] = time.perf_counter() - t
        full = engine.score(Request.chat(user + " (case 0)", prefill=arm_prefill(spec, "think") + trace + cue), YES_NO)
        out["probe_full_minus_score"] = probes[0].probs["Yes"] - full.probs["Yes"]
        assert abs(out["probe_full_minus_score"]) < 0.1, out
        fresh = Request.chat(
            user + " (fused)", prefill=arm_prefill(spec, "think"), sampling=Sampling(max_tokens=max_tokens)
        )
        t = time.perf_counter()
        g, fused = engine.generate_and_probe(fresh, [0.0, 0.5, 1.0], cue, YES_NO)
        out["generate_and_probe_s"] = time.perf_counter() - t
        assert len(fused) == 3 and all(math.isclose(sum(x.probs.values()), 1.0, abs_tol=1e-6) for x in fused)
        out["fused_p_yes"] = [x.probs["Yes"] for x in fused]
    stats = getattr(engine, "stats", None)
    if stats is not None and getattr(stats, "probe_cached_tokens", 0):
        out["probe_cache_share"] = probe_cache_share(stats)  # vLLM: prompt tokens its prefix cache served
        out["preemptions"] = stats.preemptions
    return out
