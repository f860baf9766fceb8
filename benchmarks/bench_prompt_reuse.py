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
of the work), and checks that both gave the same texts. ``--tiny``: one question, 2-token
answers, one repetition (seconds; the ratio means nothing then).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from dataclasses import replace
from pathlib import Path

import yaml

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
    ap.add_argument("--tiny", action="store_true", help="one question, 2-token answers, one repetition")
    args = ap.parse_args()
    clock = CLOCKS[args.clock]

    from thinkbias.config import validate_config
    from thinkbias.data.fetch import fetch_manifest_file
    from thinkbias.data.loaders import load_mcq
    from thinkbias.data.sampling import sample_rows
    from thinkbias.llm import load_model_spec, open_engine
    from thinkbias.llm.run import run_requests
    from thinkbias.llm.thinking import arm_prefill, thinking_instruction
    from thinkbias.position.generation import build_requests
    from thinkbias.position.items import four_option_items, permutations_table

    config = validate_config(
        yaml.safe_load((REPO / "config/config.yaml").read_text()), str(REPO / "config/schema/config.schema.yaml")
    )
    pos = config["position"]
    n_questions, reps = (1, 1) if args.tiny else (args.questions, args.reps)
    max_tokens = 2 if args.tiny else int(pos["max_tokens"][args.mode])

    def fetched(path: str) -> str:  # through the manifest, checked against its sha256, as the workflow's files
        relpath = str(Path(path).relative_to("resources"))
        return str(fetch_manifest_file(REPO / config["manifest"], relpath, root=REPO / "resources"))

    mcq = load_mcq("mmlu", fetched(pos["benchmarks"]["mmlu"]["path"]), seed=config["seed"])
    items = sample_rows(four_option_items(mcq), n_questions, config["seed"], "item_id", salt="position")
    prompts = permutations_table(items, "cyclic")
    reuse = load_model_spec(
        str(REPO / config["registry"]),
        "smollm2-135m",
        weights=fetched("resources/models/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf"),
    )
    fresh = replace(reuse, extra={**reuse.extra, "prompt_reuse": False})
    mode = args.mode
    think = arm_prefill(reuse, "think") if mode == "reasoning" else ""
    reqs = build_requests(prompts, mode, think, arm_prefill(reuse, "nothink"), thinking_instruction(reuse), max_tokens)

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
    print(f"{len(reqs)} requests ({n_questions} questions x 4 orderings), mode {mode}, {args.clock} seconds, {reps} rep(s)")
    for name in ("fresh", "reuse"):
        ev, kept = evaluated[name]
        print(f"  {name:5s}  {statistics.median(seconds[name]):7.2f} s, {ev} prompt tokens evaluated, {kept} kept")
    verdict = f" (goal <= {GOAL}: {'met' if ratio <= GOAL else 'missed'})" if mode == "direct" else ""
    print(f"reuse / fresh = {ratio:.3f}{verdict}; per repetition {', '.join(f'{r:.3f}' for r in ratios)}; texts identical")


if __name__ == "__main__":
    main()
