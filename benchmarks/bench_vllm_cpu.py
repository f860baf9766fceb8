"""vLLM on the CPU: the engine in one process / vLLM's default process layout, on the same requests.

    python benchmarks/bench_vllm_cpu.py [--requests 8] [--tokens 48] [--reps 3] [--tiny]

vLLM's default layout on the CPU is three processes: the ``LLM`` front end, an engine-core process
and a model worker, which poll one another. On a machine with as many cores as the worker's OpenMP
threads, the pollers take the cores the worker's threads wait for. ``extra.engine_core_in_process``
(``VLLM_ENABLE_V1_MULTIPROCESSING=0``) with ``distributed_executor_backend: uni`` runs the engine
core and the model in the front end's process (the vLLM worker of ``thinkbias.llm.vllm_runner``).

Each repetition opens the registry model through ``open_engine`` (the production path) once per
layout, alternating which goes first, and times: the engine's start, greedy generation of
``--requests`` requests of ``--tokens`` tokens, the same requests sampled at T = 0.7 with per-request
seeds (the blindspot targets), and Yes/No scoring. Printed: median seconds per layout and the median
of the per-repetition ratios one process / default (goal: <= 0.5 for generation on 2 cores).
``--tiny``: 2 requests, 4 tokens, one repetition (the ratios mean nothing then).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from thinkbias.llm import load_model_spec, open_engine  # noqa: E402
from thinkbias.llm.types import YES_NO, Request, Sampling  # noqa: E402

LAYOUTS = {
    "default (3 processes)": {"engine_core_in_process": False, "distributed_executor_backend": "mp"},
    "one process": {"engine_core_in_process": True, "distributed_executor_backend": "uni"},
}


def requests(n: int, tokens: int, temperature: float) -> list[Request]:
    """``n`` distinct loan questions, each asked for ``tokens`` tokens (seeded when sampled)."""
    return [
        Request.chat(
            f"Applicant {i}: income {30 + 7 * i} thousand, {i % 5} late payments, asks for {5 + i} thousand. "
            "Should the loan be approved? Explain, then answer Yes or No.",
            sampling=Sampling(temperature=temperature, top_p=0.95 if temperature else 1.0, seed=i, max_tokens=tokens),
        )
        for i in range(n)
    ]


def time_layout(spec, n: int, tokens: int) -> dict[str, float]:
    """Seconds of each step for one engine of ``spec`` (no cache: every request computed)."""
    out = {}
    t0 = time.perf_counter()
    with open_engine(spec, None) as engine:
        out["start"] = time.perf_counter() - t0
        for step, temperature in (("greedy", 0.0), ("sampled", 0.7)):
            t = time.perf_counter()
            gens = engine.generate(requests(n, tokens, temperature))
            out[step] = time.perf_counter() - t
            out[f"{step}_tokens"] = sum(g.completion_tokens for g in gens)
        t = time.perf_counter()
        engine.score_many(requests(n, 1, 0.0), YES_NO)
        out["score"] = time.perf_counter() - t
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m-vllm")
    ap.add_argument("--registry", default=str(REPO / "config/models.yaml"))
    ap.add_argument("--weights", default="")
    ap.add_argument("--requests", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=48)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--tiny", action="store_true", help="2 requests, 4 tokens, one repetition")
    args = ap.parse_args()
    if args.tiny:
        args.requests, args.tokens, args.reps = 2, 4, 1
    base = load_model_spec(args.registry, args.model, weights=args.weights)
    names = list(LAYOUTS)
    runs: dict[str, list[dict]] = {name: [] for name in names}
    for rep in range(args.reps):
        for name in names if rep % 2 == 0 else names[::-1]:
            spec = dataclasses.replace(base, extra={**base.extra, **LAYOUTS[name]})
            runs[name].append(time_layout(spec, args.requests, args.tokens))
            print(f"rep {rep + 1} {name}: {runs[name][-1]}", file=sys.stderr, flush=True)
    default, single = names
    print(f"\nmodel {base.id}, {args.requests} requests of {args.tokens} tokens, {args.reps} repetitions (ABAB)")
    print(f"| step | {default} s | {single} s | ratio one process / default (median) |")
    print("|---|---|---|---|")
    for step in ("start", "greedy", "sampled", "score"):
        ratios = [b[step] / a[step] for a, b in zip(runs[default], runs[single])]
        a = statistics.median(r[step] for r in runs[default])
        b = statistics.median(r[step] for r in runs[single])
        print(f"| {step} | {a:.2f} | {b:.2f} | {statistics.median(ratios):.3f} |")
    tokens = {name: [r["greedy_tokens"] + r["sampled_tokens"] for r in runs[name]] for name in names}
    print(f"\ngenerated tokens per repetition: {tokens}")


if __name__ == "__main__":
    main()
