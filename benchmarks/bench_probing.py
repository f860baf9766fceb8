"""Probing cost on the embedded model: prints the four ratios that choose the rule structure.

    python benchmarks/bench_probing.py [--threads 1] [--trace-tokens 400] [--cuts 10] [--reps 3]

All timings in one process, on the same loaded model; each is the minimum over ``--reps`` runs
(the machine may be shared, the minimum is the least disturbed run). Ratios:

1. fused probing (right after generating the trace: deepest cut first, KV truncation, only the cue
   tokens evaluated per cut) / generating the trace                       goal <= 0.10
2. probing in a later job (one prefill of prompt + trace, KV reused across cuts) / one prefill of
   prompt + full trace                                                    goal <= 1.2
3. naive probing (a fresh prefill of prompt + trace[:cut] + cue per cut) / the same one prefill;
   and naive / later-job probing                                          later job must win by >= 5x
4. engine generation throughput / a bare llama-cpp-python loop (create_completion, greedy) on the
   same rendered prompts                                                  goal >= 0.95
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CUE = "\n</think>\n\nAnswer:"  # the fairness study's probe cue (thinkbias/fairness/generation.py)
PROMPT = ("Think step by step, at length, about whether a 38-year-old nurse who works 45 hours a week in "
          "Ohio, has a bachelor's degree and is married, earns more than $50,000 a year. Consider every "
          "factor: education, occupation, hours, age, region, household, and economic conditions.")
GEN_PROMPTS = ["Describe how bread is made.", "Explain why the sky is blue.", "Tell a short story about a fox.",
               "List some tips for learning a language."]


def best(fn, reps: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(reps):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--trace-tokens", type=int, default=400)
    ap.add_argument("--cuts", type=int, default=10)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--gen-tokens", type=int, default=96)
    args = ap.parse_args()

    from llama_cpp import Llama

    from thinkbias.llm import load_model_spec, open_engine
    from thinkbias.llm.thinking import arm_prefill
    from thinkbias.llm.types import YES_NO, Request, Sampling

    spec = load_model_spec(REPO / "config/models.yaml", "smollm2-135m")
    eng = open_engine(spec, None, n_threads=args.threads)
    req = Request.chat(PROMPT, prefill=arm_prefill(spec, "think"), sampling=Sampling(max_tokens=args.trace_tokens))
    prompt = eng.tokenize_prompt(eng.render(req))
    cue = eng.tokenize_text(CUE)
    K = args.cuts

    # 1. fused: generate, then probe deepest first on the KV cache generation left
    t_gen, t_fused = [], []
    for _ in range(args.reps):
        t = time.perf_counter()
        tokens, _, _, _ = eng.generate_tokens(prompt, req.sampling)
        t_gen.append(time.perf_counter() - t)
        n = len(tokens)
        cuts = [round(n * (i + 1) / K) for i in range(K)]
        t = time.perf_counter()
        eng.probe_tokens(lambda c: prompt + tokens[:c], cuts, CUE, YES_NO)
        t_fused.append(time.perf_counter() - t)
    gen_s, fused_s = min(t_gen), min(t_fused)

    # 2. later job: one prefill, KV reused across cuts; versus one plain prefill of the full trace
    def later():
        eng.llm.n_tokens = 0
        return eng.probe_tokens(lambda c: prompt + tokens[:c], cuts, CUE, YES_NO)

    def prefill_full():
        eng.eval_fresh(prompt + tokens)

    prefill_s, _ = best(prefill_full, args.reps)
    later_s, _ = best(later, args.reps)

    # 3. naive: a fresh prefill per cut
    def naive():
        for c in cuts:
            eng.eval_fresh(prompt + tokens[:c] + cue)
            eng.last_logits()

    naive_s, _ = best(naive, args.reps)

    # 4. generation throughput: engine vs a bare llama-cpp-python loop, interleaved
    bare = Llama(spec.weights, n_ctx=spec.n_ctx, n_threads=args.threads, n_threads_batch=args.threads,
                 logits_all=False, verbose=False)
    reqs = [Request.chat(p, sampling=Sampling(max_tokens=args.gen_tokens)) for p in GEN_PROMPTS]
    rendered = [eng.render(r) for r in reqs]
    ratios, eng_rates, bare_rates = [], [], []
    for rep in range(args.reps):
        eng.cache.close()
        from thinkbias.llm.cache import RequestCache

        eng.cache = RequestCache(None)  # empty cache: every request is generated
        t = time.perf_counter()
        gens = eng.generate(reqs)
        e_rate = sum(g.completion_tokens for g in gens) / (time.perf_counter() - t)
        t = time.perf_counter()
        n_bare = 0
        for text in rendered:
            bare.reset()
            out = bare.create_completion(text, max_tokens=args.gen_tokens, temperature=0.0, top_p=1.0, seed=0)
            n_bare += out["usage"]["completion_tokens"]
        b_rate = n_bare / (time.perf_counter() - t)
        eng_rates.append(e_rate)
        bare_rates.append(b_rate)
        ratios.append(e_rate / b_rate)
    bare.close()

    print(f"model {spec.id}, threads {args.threads}, trace {n} tokens (prompt {len(prompt)}), K={K} cuts, "
          f"cue {len(cue)} tokens, best of {args.reps}")
    print(f"generate trace            {gen_s:8.3f} s  ({n / gen_s:.1f} tok/s)")
    print(f"fused probing             {fused_s:8.3f} s")
    print(f"one prefill (full trace)  {prefill_s:8.3f} s")
    print(f"later-job probing         {later_s:8.3f} s")
    print(f"naive probing             {naive_s:8.3f} s")
    print(f"engine generation         {statistics.median(eng_rates):8.1f} tok/s (median)")
    print(f"bare llama-cpp-python     {statistics.median(bare_rates):8.1f} tok/s (median)")
    print()
    print(f"1. fused / generation           = {fused_s / gen_s:.3f}   (goal <= 0.10)")
    print(f"2. later-job / one prefill      = {later_s / prefill_s:.3f}   (goal <= 1.2)")
    print(f"3. naive / one prefill          = {naive_s / prefill_s:.3f}   (naive / later-job = "
          f"{naive_s / later_s:.1f}x, goal >= 5x)")
    print(f"4. engine / bare throughput     = {statistics.median(ratios):.3f}   (goal >= 0.95; per rep "
          f"{', '.join(f'{r:.3f}' for r in ratios)})")
    eng.close()


if __name__ == "__main__":
    main()
