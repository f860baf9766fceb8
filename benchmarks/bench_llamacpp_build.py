"""Tokens/s of the installed llama.cpp build against another build, on the embedded model.

    python benchmarks/bench_llamacpp_build.py --baseline-python PATH [--reps 5] [--tokens 64] [--threads 2]
    python benchmarks/bench_llamacpp_build.py --baseline-variant haswell     # one variant pinned, same wheel

Two builds cannot share one process, so each repetition runs the same workload once in this
interpreter (the project's runtime-dispatch wheel) and once in ``--baseline-python`` (an interpreter
with another llama-cpp-python, e.g. a native build without AMX), alternating which goes first
(ABAB), each in a fresh subprocess of the same machine within seconds of the other. The workload is
the production path: ``open_engine`` on the registry's embedded model, then ``Engine.generate`` of
8 greedy requests (prompt prefill + ``--tokens`` tokens each), timed by the process's CPU seconds
and wall seconds. Printed: each build's median tokens/s and the median of the per-repetition
ratios dispatch / baseline (goal: >= 0.95 against a native build without AMX). With
``--baseline-variant V`` the baseline is this same interpreter with ``THINKBIAS_LLAMACPP_CPU_VARIANT=V``:
the cost of pinning one kernel variant for runs that must match across machines. The greedy texts
of both builds are compared too. ``--tiny``: one repetition of 4 tokens.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

WORKLOAD = """
import json, resource, sys, time
from thinkbias.llm import load_model_spec, open_engine
from thinkbias.llm.llamacpp_backends import build_info
from thinkbias.llm.types import Request, Sampling
spec = load_model_spec(sys.argv[1], "smollm2-135m", weights=sys.argv[2])
reqs = [Request.chat(f"Write about the number {i} in a few sentences.",
                     sampling=Sampling(max_tokens=int(sys.argv[3]))) for i in range(8)]
with open_engine(spec, None, n_threads=int(sys.argv[4])) as eng:
    eng.generate([Request.chat("warm up", sampling=Sampling(max_tokens=4))])
    c0, w0 = time.process_time(), time.perf_counter()
    gens = eng.generate(reqs)
    cpu, wall = time.process_time() - c0, time.perf_counter() - w0
    tokens = sum(g.completion_tokens + g.prompt_tokens for g in gens)
    texts = [g.text for g in gens]
    build = build_info(int(sys.argv[4]))
    print(json.dumps({"tokens": tokens, "cpu_s": cpu, "wall_s": wall, "build": build, "texts": texts}))
"""


def run_once(python: str, weights: str, tokens: int, threads: int, variant: str = "") -> dict:
    """One workload run in ``python`` (with one CPU variant pinned, if given); its JSON line."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("THINKBIAS_LLAMACPP_CPU_VARIANT", None)
    if variant:
        env["THINKBIAS_LLAMACPP_CPU_VARIANT"] = variant
    args = [python, "-c", WORKLOAD, str(REPO / "config/models.yaml"), weights, str(tokens), str(threads)]
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline-python", default=sys.executable)
    ap.add_argument("--baseline-variant", default="", help="pin this CPU variant in the baseline run")
    ap.add_argument("--weights", default=str(REPO / "resources/models/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--tiny", action="store_true")
    args = ap.parse_args()
    if args.tiny:
        args.reps, args.tokens = 1, 4
    builds = {"dispatch": sys.executable, "baseline": args.baseline_python}
    rates: dict[str, dict[str, list[float]]] = {b: {"cpu": [], "wall": []} for b in builds}
    ratios: dict[str, list[float]] = {"cpu": [], "wall": []}
    info = {}
    for rep in range(args.reps):
        order = list(builds) if rep % 2 == 0 else list(builds)[::-1]
        variants = {"dispatch": "", "baseline": args.baseline_variant}
        got = {b: run_once(builds[b], args.weights, args.tokens, args.threads, variants[b]) for b in order}
        same_texts = got["dispatch"]["texts"] == got["baseline"]["texts"]
        for b, r in got.items():
            info[b] = r["build"]
            for clock in ("cpu", "wall"):
                rates[b][clock].append(r["tokens"] / r[f"{clock}_s"])
        for clock in ("cpu", "wall"):
            ratios[clock].append(rates["dispatch"][clock][-1] / rates["baseline"][clock][-1])
    for b in builds:
        print(f"{b}: {info[b]['cpu_variant']} {' '.join(info[b]['cpu_features'])}")
    print(f"greedy texts identical between the builds: {same_texts} (8 requests)")
    print("| clock | dispatch tok/s | baseline tok/s | dispatch / baseline (median of reps) | reps |")
    print("|---|---|---|---|---|")
    for clock in ("cpu", "wall"):
        med = {b: statistics.median(rates[b][clock]) for b in builds}
        spread = f"{min(ratios[clock]):.3f}-{max(ratios[clock]):.3f}"
        print(
            f"| {clock} | {med['dispatch']:.0f} | {med['baseline']:.0f} | "
            f"{statistics.median(ratios[clock]):.3f} ({spread}) | {args.reps} |"
        )


if __name__ == "__main__":
    main()
