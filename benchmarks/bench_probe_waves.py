"""Probing in waves on vLLM (CPU): the share of probe-prompt tokens the prefix cache serves, and the
job's time, with waves against one wave for the whole job (how the engine probed before waves).

    python benchmarks/bench_probe_waves.py [--requests 24] [--wave 8] [--tokens 48] [--kv-blocks 192] [--tiny]

Both runs open the registry model through ``open_engine`` (the production path) with the same small
KV cache (``--kv-blocks`` of the registry's block size; the default, 192 blocks of 32, holds 6,144
tokens of the embedded model: a few waves' traces with their probes, not the job's), an empty request cache, and run
``generate_and_probe_many`` on the same applicant questions (``thinkbias.llm.probe_waves``) at five
depths. The baseline sets ``batch_size`` to the whole job: every generation first, then every probe,
by which time the first traces have left the cache. Printed: each run's cache share (vLLM's
``num_cached_tokens`` over the probe prompts' tokens; goal for waves: >= 0.9), preemptions, seconds,
and the ratio waves / one wave.
``--tiny``: 4 requests in waves of 2, 8 tokens.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from thinkbias.llm import load_model_spec, open_engine  # noqa: E402
from thinkbias.llm.probe_waves import DEPTH_FRACTIONS, applicant_requests, probe_cache_share  # noqa: E402
from thinkbias.llm.types import YES_NO  # noqa: E402

CUE = "\n</think>\n\nAnswer:"


def run(spec, n: int, tokens: int) -> dict:
    """One job's cache share, preemptions and seconds (the engine's start not counted)."""
    with open_engine(spec, None) as engine:
        t = time.perf_counter()
        engine.generate_and_probe_many(applicant_requests(spec, n, tokens), DEPTH_FRACTIONS, CUE, YES_NO)
        seconds = time.perf_counter() - t
        stats = engine.stats
        return {
            "share": probe_cache_share(stats),
            "probe_tokens": stats.probe_tokens,
            "preemptions": stats.preemptions,
            "seconds": seconds,
        }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m-vllm")
    ap.add_argument("--registry", default=str(REPO / "config/models.yaml"))
    ap.add_argument("--weights", default="")
    ap.add_argument("--requests", type=int, default=24)
    ap.add_argument("--wave", type=int, default=8)
    ap.add_argument("--tokens", type=int, default=48)
    ap.add_argument("--kv-blocks", type=int, default=192)
    ap.add_argument("--tiny", action="store_true", help="4 requests in waves of 2, 8 tokens")
    args = ap.parse_args()
    if args.tiny:
        args.requests, args.wave, args.tokens = 4, 2, 8
    base = load_model_spec(args.registry, args.model, weights=args.weights)
    runs = {}
    for name, wave in (("one wave", args.requests), ("waves", args.wave)):
        spec = dataclasses.replace(
            base, extra={**base.extra, "num_gpu_blocks_override": args.kv_blocks, "batch_size": wave}
        )
        runs[name] = run(spec, args.requests, args.tokens)
        print(f"{name}: {runs[name]}", file=sys.stderr, flush=True)
    print(f"\nmodel {base.id}, {args.requests} requests of {args.tokens} tokens, KV cache {args.kv_blocks} blocks")
    print("| run | wave | probe-prompt tokens served by the cache | preemptions | seconds |")
    print("|---|---|---|---|---|")
    for name, wave in (("one wave", args.requests), ("waves", args.wave)):
        r = runs[name]
        print(
            f"| {name} | {wave} | {r['share']:.3f} of {r['probe_tokens']} | {r['preemptions']} | {r['seconds']:.2f} |"
        )
    ratio = runs["waves"]["seconds"] / runs["one wave"]["seconds"]
    print(f"\nratio waves / one wave (seconds): {ratio:.3f}; cache share with waves {runs['waves']['share']:.3f} "
          "(goal >= 0.9)")  # fmt: skip


if __name__ == "__main__":
    main()
