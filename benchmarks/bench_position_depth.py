"""Cost of the position study's depth probe on the embedded model, against the generation it reads.

    python benchmarks/bench_position_depth.py [--questions 3] [--mode reasoning] [--max-tokens 64] [--threads 1]
                                              [--reps 1] [--clock cpu] [--tiny]

Uses the embedded config's position settings (config/config.yaml: MMLU, the mode's ``max_tokens``,
``position.depth_probe.depths``) on the first ``--questions`` sampled questions x 4 orderings, and
the calls the workflow makes on ``build_requests``: the generation job without the probe
(``run_requests``), the generation job with it (``generate_and_probe_depths``: generate and probe
in one pass, fused), and the ``position_depth_probe`` job (``probe_depths`` on the cached
generations). Each run starts from an empty cache but the last, which reads the first run's. Model
loading is outside every timing; ``--clock cpu`` (default) times this process's CPU seconds, which
a shared machine disturbs less than wall time (``--clock wall``). With ``--reps`` above 1 the
generation and the fused run alternate and each ratio is the median over repetitions. Prints:

1. generation alone: seconds and tokens generated;
2. fused: ``(generate+probe - generation) / generation`` (the benchmark line of docs/position.md;
   goal <= 0.2: a few cue tokens per depth) and the prompt-side tokens the probes evaluated;
3. the probe job on cached generations (one prefill of prompt + trace per record, then the cues):
   ``probe / generation``.

``--tiny`` runs one ordering of one question with 4-token traces (seconds; the ratios mean nothing then).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from thinkbias.llm.throughput import CLOCKS

REPO = Path(__file__).resolve().parents[1]


FUSED_GOAL = 0.2  # (generate+probe - generation) / generation: a few cue tokens per depth


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=int, default=3)
    ap.add_argument("--mode", choices=["reasoning", "cot"], default="reasoning")
    ap.add_argument("--max-tokens", type=int, default=None, help="default: the config's position.max_tokens[mode]")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=1, help="alternating generation / fused repetitions")
    ap.add_argument("--clock", choices=sorted(CLOCKS), default="cpu")
    ap.add_argument("--tiny", action="store_true", help="one ordering of one question, 4-token traces")
    args = ap.parse_args()
    clock = CLOCKS[args.clock]

    def timed(fn):
        t = clock()
        out = fn()
        return clock() - t, out

    from thinkbias.llm import open_engine
    from thinkbias.llm.run import run_requests
    from thinkbias.position.depth_probe import generate_and_probe_depths, probe_depths
    from thinkbias.position.embedded_sample import embedded_position_sample
    from thinkbias.position.generation import generations_table

    n_questions = 1 if args.tiny else args.questions
    mode = args.mode
    sample = embedded_position_sample(
        REPO, n_questions, mode, 4 if args.tiny else args.max_tokens, orderings=1 if args.tiny else 4
    )
    prompts, spec, reqs = sample.prompts, sample.spec, sample.requests
    depths = sample.position["depth_probe"]["depths"]

    with tempfile.TemporaryDirectory() as tmp:
        gen_s, fused_s, ratios = [], [], []
        for rep in range(max(1, args.reps)):
            with open_engine(spec, Path(tmp) / f"gen-{rep}", n_threads=args.threads) as eng:
                t_gen, gens = timed(lambda: run_requests(eng, reqs))
                n_gen, gen_prompt = eng.stats.generated_tokens, eng.stats.prompt_tokens
            with open_engine(spec, Path(tmp) / f"fused-{rep}", n_threads=args.threads) as eng:
                t_fused, pairs = timed(lambda: generate_and_probe_depths(eng, reqs, mode, spec.think_close, depths))
                cue_tokens = eng.stats.prompt_tokens - gen_prompt
            assert [g.text for g, _ in pairs] == [g.text for g in gens], "fused generation differs from generation"
            gen_s.append(t_gen)
            fused_s.append(t_fused)
            ratios.append(max(0.0, t_fused - t_gen) / t_gen)
        table = generations_table(prompts, spec.id, mode, reqs, gens)
        with open_engine(spec, Path(tmp) / "gen-0", n_threads=args.threads) as eng:
            t_probe, _ = timed(lambda: probe_depths(eng, reqs, table, mode, spec.think_close, depths))
            probe_tokens = eng.stats.prompt_tokens
    fused_ratio = statistics.median(ratios)
    print(
        f"{len(reqs)} traces ({n_questions} questions x {len(reqs) // n_questions} orderings), mode {mode}, "
        f"{len(depths)} depths {depths}, "
        f"{args.clock} seconds, {len(ratios)} repetition(s)"
    )
    print(f"1. generation alone           {statistics.median(gen_s):7.2f} s, {n_gen} tokens generated")
    print(
        f"2. generation + fused probes  {statistics.median(fused_s):7.2f} s, {cue_tokens} cue tokens evaluated; "
        f"(generate+probe - generation) / generation = {fused_ratio:.3f} (goal <= {FUSED_GOAL}: "
        f"{'met' if fused_ratio <= FUSED_GOAL else 'missed'})"
    )
    print(
        f"3. probe job, cached traces   {t_probe:7.2f} s, {probe_tokens} prompt-side tokens; "
        f"probe / generation = {t_probe / statistics.median(gen_s):.3f}"
    )


if __name__ == "__main__":
    main()
