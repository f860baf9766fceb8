"""Batched / sequential llama.cpp generation throughput on the embedded model, in one process.

    python benchmarks/bench_batching.py [--sequences 1 4 8 16] [--threads 1 2] [--tokens 64] [--reps 5]
                                        [--clock wall] [--tiny]

For each thread count, one sequential engine (``n_parallel = 1``) and one batched engine
(``n_parallel`` = the largest ``--sequences``) of the same model run the same greedy requests
through ``Engine.generate`` (the production path), alternating which goes first (ABAB); the table
gives median tokens/s and the median of the per-repetition ratios (goal: >= 1.5 at 8 sequences
with 2 threads). ``--clock cpu`` times the process's CPU seconds instead of elapsed time (with
one thread, a measure a loaded machine barely moves). See thinkbias/llm/throughput.py and
docs/engine.md. ``--tiny``: 1 and 2 sequences, 1 thread, 4 tokens, one repetition (seconds; the
ratios mean nothing then).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from thinkbias.llm import load_model_spec  # noqa: E402
from thinkbias.llm.llamacpp import effective_threads  # noqa: E402
from thinkbias.llm.throughput import CLOCKS, batching_ratios, ratio_table  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--registry", default=str(REPO / "config/models.yaml"))
    ap.add_argument("--weights", default="")
    ap.add_argument("--sequences", type=int, nargs="+", default=[1, 4, 8, 16])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--tokens", type=int, default=64, help="greedy tokens per request")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--n-ctx", type=int, default=512, help="context per sequence (keeps the KV cache small)")
    ap.add_argument(
        "--clock", choices=sorted(CLOCKS), default="wall", help="wall: elapsed time; cpu: this process's CPU seconds"
    )
    ap.add_argument("--tiny", action="store_true", help="tiny sizes, one repetition")
    args = ap.parse_args()
    if args.tiny:
        args.sequences, args.threads, args.tokens, args.reps = [1, 2], [1], 4, 1
    spec = load_model_spec(args.registry, args.model, weights=args.weights)
    rows = []
    for threads in args.threads:
        used = effective_threads(threads, spec.extra)
        if used != threads:
            print(f"note: {threads} threads requested, {used} usable (CPUs or THINKBIAS_THREADS)", file=sys.stderr)
        rows += batching_ratios(spec, args.sequences, used, args.tokens, args.reps, args.n_ctx, args.clock)
        print(ratio_table(rows[-len(args.sequences) :]), file=sys.stderr, flush=True)
    print(
        f"\nmodel {spec.id}, {args.tokens} greedy tokens per request, {args.reps} repetitions (ABAB), "
        f"{args.clock} clock"
    )
    print(ratio_table(rows))


if __name__ == "__main__":
    main()
