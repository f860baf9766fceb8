"""Sequential llama.cpp generation keeping the shared prompt prefix, against a fresh prefill per prompt.

    python benchmarks/bench_prompt_reuse.py [--questions 6] [--mode direct] [--threads 1] [--reps 2]
                                            [--clock cpu] [--tiny]

The position study's requests of the embedded config (config/config.yaml: MMLU, the mode's
``max_tokens``) for the first ``--questions`` sampled questions x 4 orderings, generated through
``run_requests`` (the generation job's path) by two engines of the embedded model: the registry's
(``extra.prompt_reuse`` on: prompts in sorted order, the prefix shared with the previous prompt
kept) and one with ``prompt_reuse: false`` (every prompt prefilled whole, in the order given). Each
repetition starts both from an empty cache and alternates which goes first (ABAB); model loading is
outside every timing. Prints the prompt tokens each evaluated, the median seconds and the median
of the per-repetition ratios reuse / fresh (goal <= 0.75 in the direct mode, where prefill is most
of the work), and checks that both gave the same texts. ``--tiny``: two orderings of one
question (a shared prefix to keep), 2-token answers, one repetition (seconds; the ratio means nothing then).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from dataclasses import replace
from pathlib import Path

from thinkbias.llm.throughput import CLOCKS

REPO = Path(__file__).resolve().parents[1]
GOAL = 0.75  # reuse / fresh seconds, direct mode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=int, default=6)
    ap.add_argument("--mode", choices=["direct", "cot", "reasoning"], default="direct")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--clock", choices=sorted(CLOCKS), default="cpu")
    ap.add_argument(
        "--tiny", action="store_true", help="two orderings of one question, 2-token answers, one repetition"
    )
    args = ap.parse_args()
    clock = CLOCKS[args.clock]

    from thinkbias.llm import open_engine
    from thinkbias.llm.run import run_requests
    from thinkbias.position.embedded_sample import embedded_position_sample

    n_questions, reps = (1, 1) if args.tiny else (args.questions, args.reps)
    mode = args.mode
    sample = embedded_position_sample(
        REPO, n_questions, mode, 2 if args.tiny else None, orderings=2 if args.tiny else 4
    )
    reuse, reqs = sample.spec, sample.requests
    fresh = replace(reuse, extra={**reuse.extra, "prompt_reuse": False})

    seconds: dict[str, list[float]] = {"reuse": [], "fresh": []}
    evaluated, texts = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(reps):
            order = [("reuse", reuse), ("fresh", fresh)][:: 1 if rep % 2 == 0 else -1]
            for name, spec in order:
                with open_engine(spec, Path(tmp) / f"{name}-{rep}", n_threads=args.threads) as eng:
                    t = clock()
                    gens = run_requests(eng, reqs)
                    seconds[name].append(clock() - t)
                    evaluated[name] = (eng.stats.prompt_tokens, eng.stats.reused_prompt_tokens)
                    texts[name] = [g.text for g in gens]
    assert texts["reuse"] == texts["fresh"], "keeping the shared prefix changed a generation"
    ratios = [r / f for r, f in zip(seconds["reuse"], seconds["fresh"])]
    ratio = statistics.median(ratios)
    print(
        f"{len(reqs)} requests ({n_questions} questions x {len(reqs) // n_questions} orderings), mode {mode}, "
        f"{args.clock} seconds, {reps} rep(s)"
    )
    for name in ("fresh", "reuse"):
        ev, kept = evaluated[name]
        print(f"  {name:5s}  {statistics.median(seconds[name]):7.2f} s, {ev} prompt tokens evaluated, {kept} kept")
    verdict = f" (goal <= {GOAL}: {'met' if ratio <= GOAL else 'missed'})" if mode == "direct" else ""
    print(
        f"reuse / fresh = {ratio:.3f}{verdict}; per repetition {', '.join(f'{r:.3f}' for r in ratios)}; texts identical"
    )


if __name__ == "__main__":
    main()
