"""Tokens/s of the installed llama.cpp build against another build, on the embedded model.

    python benchmarks/bench_llamacpp_build.py --baseline-python PATH [--reps 5] [--tokens 64] [--threads 2]

Two builds cannot share one process, so each repetition runs the same workload once in this
interpreter (the project's runtime-dispatch wheel) and once in ``--baseline-python`` (an interpreter
with another llama-cpp-python, e.g. a native build without AMX), alternating which goes first
(ABAB), each in a fresh subprocess of the same machine within seconds of the other. The workload is
the production path: ``open_engine`` on the registry's embedded model, then ``Engine.generate`` of
8 greedy requests (prompt prefill + ``--tokens`` tokens each), timed by the process's CPU seconds
and wall seconds. Printed: each build's median tokens/s and the median of the per-repetition
ratios dispatch / baseline (goal: >= 0.95). ``--tiny``: one repetition of 4 tokens.
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
    print(json.dumps({"tokens": tokens, "cpu_s": cpu, "wall_s": wall, "build": build_info(int(sys.argv[4]))}))
"""


def run_once(python: str, weights: str, tokens: int, threads: int) -> dict:
    """One workload run in ``python``; its JSON line."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    args = [python, "-c", WORKLOAD, str(REPO / "config/models.yaml"), weights, str(tokens), str(threads)]
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline-python", required=True)
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
        got = {b: run_once(builds[b], args.weights, args.tokens, args.threads) for b in order}
        for b, r in got.items():
            info[b] = r["build"]
            for clock in ("cpu", "wall"):
                rates[b][clock].append(r["tokens"] / r[f"{clock}_s"])
        for clock in ("cpu", "wall"):
            ratios[clock].append(rates["dispatch"][clock][-1] / rates["baseline"][clock][-1])
    for b in builds:
        print(f"{b}: {info[b]['cpu_variant']} {' '.join(info[b]['cpu_features'])}")
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
