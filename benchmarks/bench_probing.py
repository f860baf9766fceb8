"""Probing cost on the embedded model: prints the four ratios that choose the rule structure.

    python benchmarks/bench_probing.py [--threads 1] [--trace-tokens 400] [--reps 3] [--depths 5 10 20]
                                       [--clock cpu] [--tiny]

The fused and later-job measurements call the engine methods the fairness study calls, with the
arguments it passes (``thinkbias.fairness.generation``): the think arm's request
(``think_request``), the probe cue ``probe_cue(think_close)`` and the relative depths k/K of every K
the study probes (``depth_fractions`` of ``fairness.depths`` and ``fairness.sensitivity_depths``
in config/config.yaml, unless ``--depths`` names others) through ``Engine.generate_and_probe_many``;
a later job's probes through ``Engine.probe`` at the same cuts (``union_cuts``). Every timed call
starts from an empty request cache, so nothing is served from an earlier repetition.

All timings in one process, on the same loaded model; each is the minimum over ``--reps`` runs
(the machine may be shared, the minimum is the least disturbed run). ``--clock cpu`` (the default)
times the CPU seconds of this process, which other processes on a shared machine disturb far less
than wall time (``--clock wall``); with one thread the two agree on an idle machine. Ratios:

1. fused probing (generation and probes in one ``generate_and_probe_many`` call, minus the same
   generation alone through ``generate``) / generating the trace        goal <= 0.10
2. probing in a later job (``probe``: one prefill of prompt + trace, KV reused across cuts) / one
   prefill of prompt + full trace                                        goal <= 1.2
3. naive probing (a fresh prefill of prompt + trace[:cut] + cue per cut) / the same one prefill;
   and naive / later-job probing                                          later job must win by >= 5x
4. engine generation throughput / a bare llama-cpp-python loop (create_completion, greedy) on the
   same rendered prompts                                                  goal >= 0.95

``--tiny`` runs every measurement once on a few tokens (seconds; the ratios mean nothing then):
benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path

from thinkbias.llm.throughput import CLOCKS
from thinkbias.yamlfile import read_yaml

REPO = Path(__file__).resolve().parents[1]
PROMPT = (
    "Think step by step, at length, about whether a 38-year-old nurse who works 45 hours a week in "
    "Ohio, has a bachelor's degree and is married, earns more than $50,000 a year. Consider every "
    "factor: education, occupation, hours, age, region, household, and economic conditions."
)
GEN_PROMPTS = [
    "Describe how bread is made.",
    "Explain why the sky is blue.",
    "Tell a short story about a fox.",
    "List some tips for learning a language.",
]
TINY = {"trace_tokens": 16, "reps": 1, "gen_tokens": 4, "depths": [2]}


clock = CLOCKS["cpu"]


def best(fn, reps: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(reps):
        t = clock()
        out = fn()
        times.append(clock() - t)
    return min(times), out


def empty_cache(eng) -> None:
    """Give the engine an empty in-memory request cache: the next call computes everything."""
    from thinkbias.llm.cache import RequestCache

    eng.cache.close()
    eng.cache = RequestCache(None)


def study_depths() -> list[int]:
    """Every K the fairness study probes by default (rules/fairness.smk ``fairness_depths``)."""
    fairness = read_yaml(REPO / "config/config.yaml")["fairness"]
    return sorted(set(fairness["sensitivity_depths"]) | {fairness["depths"]})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--trace-tokens", type=int, default=400)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--gen-tokens", type=int, default=96)
    ap.add_argument(
        "--depths",
        type=int,
        nargs="+",
        default=None,
        help="the K probed (default: the fairness study's, from config/config.yaml)",
    )
    ap.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="cpu",
        help="cpu: CPU seconds of this process (default); wall: elapsed seconds",
    )
    ap.add_argument("--tiny", action="store_true", help=f"tiny sizes, one run each ({TINY})")
    args = ap.parse_args()
    global clock
    clock = CLOCKS[args.clock]
    if args.tiny:
        vars(args).update(TINY)

    from thinkbias.fairness.cdpg import depth_fractions, union_cuts
    from thinkbias.fairness.generation import probe_cue, think_request
    from thinkbias.llm import load_model_spec, open_engine
    from thinkbias.llm.types import YES_NO, Request, Sampling

    spec = load_model_spec(REPO / "config/models.yaml", "smollm2-135m")
    eng = open_engine(spec, None, n_threads=args.threads)  # loads the registry's CPU variant
    from llama_cpp import Llama  # the bare loop below runs on the same variant

    Ks = sorted(set(args.depths)) if args.depths else study_depths()
    fractions = [float(f) for f in depth_fractions(Ks)]
    cue = probe_cue(spec.think_close)
    req = think_request(spec, PROMPT, args.trace_tokens)
    prompt = eng.tokenize_prompt(eng.render(req))

    # 1. fused: generation and its probes in one call, as the fairness generation job runs them,
    #    against the same generation alone (greedy: both generate the same trace)
    def generate_only():
        empty_cache(eng)
        return eng.generate([req])[0]

    def generate_and_probe():
        empty_cache(eng)
        return eng.generate_and_probe_many([req], fractions, cue, YES_NO)[0]

    t_gen, t_gap = [], []
    for _ in range(args.reps):
        t_gen.append(best(generate_only, 1)[0])
        seconds, (gen, scores) = best(generate_and_probe, 1)
        t_gap.append(seconds)
    gen_s, gap_s = min(t_gen), min(t_gap)
    fused_s = max(0.0, gap_s - gen_s)
    trace = eng.tokenize_text(gen.thinking, special=False)  # the tokens probe cuts index
    cuts = union_cuts(eng.count_tokens(gen.thinking) if gen.thinking else 0, Ks)

    # 2. later job: one prefill, KV reused across cuts (``probe``, as probe_arm calls it); versus one
    #    plain prefill of the full trace
    def later():
        empty_cache(eng)
        eng.llm.n_tokens = 0  # a fresh job: nothing of this prompt in the KV cache
        return eng.probe(req, gen.thinking, cuts, cue, YES_NO)

    def prefill_full():
        eng.eval_fresh(prompt + trace)

    prefill_s, _ = best(prefill_full, args.reps)
    later_s, _ = best(later, args.reps)

    # 3. naive: a fresh prefill per cut
    cue_tokens = eng.tokenize_text(cue)

    def naive():
        for c in cuts:
            eng.eval_fresh(prompt + trace[:c] + cue_tokens)
            eng.last_logits()

    naive_s, _ = best(naive, args.reps)

    # 4. generation throughput: engine vs a bare llama-cpp-python loop, interleaved
    bare = Llama(
        spec.weights,
        n_ctx=spec.n_ctx,
        n_threads=args.threads,
        n_threads_batch=args.threads,
        logits_all=False,
        verbose=False,
    )
    reqs = [Request.chat(p, sampling=Sampling(max_tokens=args.gen_tokens)) for p in GEN_PROMPTS]
    rendered = [eng.render(r) for r in reqs]
    ratios, eng_rates, bare_rates = [], [], []
    for rep in range(args.reps):
        empty_cache(eng)  # every request is generated
        t = clock()
        gens = eng.generate(reqs)
        e_rate = sum(g.completion_tokens for g in gens) / (clock() - t)
        t = clock()
        n_bare = 0
        for text in rendered:
            bare.reset()
            out = bare.create_completion(text, max_tokens=args.gen_tokens, temperature=0.0, top_p=1.0, seed=0)
            n_bare += out["usage"]["completion_tokens"]
        b_rate = n_bare / (clock() - t)
        eng_rates.append(e_rate)
        bare_rates.append(b_rate)
        ratios.append(e_rate / b_rate)
    bare.close()

    n = gen.completion_tokens
    print(
        f"model {spec.id}, threads {args.threads}, generated {n} tokens (trace {len(trace)}, prompt "
        f"{len(prompt)}), K in {Ks}: {len(cuts)} distinct cuts, cue {len(cue_tokens)} tokens, best of {args.reps}, "
        f"{args.clock} seconds"
    )
    print(f"generate trace            {gen_s:8.3f} s  ({n / gen_s:.1f} tok/s)")
    print(f"generate + fused probes   {gap_s:8.3f} s")
    print(f"fused probing             {fused_s:8.3f} s")
    print(f"one prefill (full trace)  {prefill_s:8.3f} s")
    print(f"later-job probing         {later_s:8.3f} s")
    print(f"naive probing             {naive_s:8.3f} s")
    print(f"engine generation         {statistics.median(eng_rates):8.1f} tok/s (median)")
    print(f"bare llama-cpp-python     {statistics.median(bare_rates):8.1f} tok/s (median)")
    print()
    print(f"1. fused / generation           = {fused_s / gen_s:.3f}   (goal <= 0.10)")
    print(f"2. later-job / one prefill      = {later_s / prefill_s:.3f}   (goal <= 1.2)")
    print(
        f"3. naive / one prefill          = {naive_s / prefill_s:.3f}   (naive / later-job = "
        f"{naive_s / later_s:.1f}x, goal >= 5x)"
    )
    print(
        f"4. engine / bare throughput     = {statistics.median(ratios):.3f}   (goal >= 0.95; per rep "
        f"{', '.join(f'{r:.3f}' for r in ratios)})"
    )
    if len(scores) != len(fractions):
        raise SystemExit(f"generate_and_probe_many returned {len(scores)} probes for {len(fractions)} depths")
    eng.close()


if __name__ == "__main__":
    main()
