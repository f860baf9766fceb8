"""Cost of the position study's depth probe on the embedded model, against the generation it reads.

    python benchmarks/bench_position_depth.py [--questions 3] [--mode reasoning] [--max-tokens 64] [--threads 1] [--tiny]

Uses the embedded config's position settings (config/config.yaml: MMLU, the mode's ``max_tokens``,
``position.depth_probe.depths``) on the first ``--questions`` sampled questions x 4 orderings, and
the calls the workflow makes: the generation job's ``Engine.generate`` on ``build_requests``, then
``probe_depths`` (the ``position_depth_probe`` job) on a fresh engine over the same cache. Model
loading is outside every timing. Prints three lines:

1. generation: seconds and tokens generated;
2. depth probe in its own job (generations cached: one prefill of prompt + trace per record, then
   the cue tokens per depth): seconds, prompt-side tokens, and ``probe / generation`` (the
   benchmark line of docs/position.md);
3. reasoning mode only: the probe riding on generation (empty cache: ``generate_and_probe_many``
   generates and probes on the KV cells it left) minus the generation alone, ``/ generation``.

``--tiny`` runs one question with 4-token traces (seconds; the ratios mean nothing then).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=int, default=3)
    ap.add_argument("--mode", choices=["reasoning", "cot"], default="reasoning")
    ap.add_argument("--max-tokens", type=int, default=None, help="default: the config's position.max_tokens[mode]")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--tiny", action="store_true", help="one question, 4-token traces")
    args = ap.parse_args()

    from thinkbias.config import validate_config
    from thinkbias.data.fetch import fetch_manifest_file
    from thinkbias.data.loaders import load_mcq
    from thinkbias.data.sampling import sample_rows
    from thinkbias.llm import load_model_spec, open_engine
    from thinkbias.llm.thinking import arm_prefill, thinking_instruction
    from thinkbias.position.depth_probe import probe_depths
    from thinkbias.position.generation import build_requests, generations_table
    from thinkbias.position.items import four_option_items, permutations_table

    config = validate_config(yaml.safe_load((REPO / "config/config.yaml").read_text()),
                             str(REPO / "config/schema/config.schema.yaml"))
    pos = config["position"]
    n_questions = 1 if args.tiny else args.questions
    max_tokens = 4 if args.tiny else (args.max_tokens or int(pos["max_tokens"][args.mode]))
    depths = pos["depth_probe"]["depths"]
    def fetched(path: str) -> str:  # through the manifest, checked against its sha256, as the workflow's files
        relpath = str(Path(path).relative_to("resources"))
        return str(fetch_manifest_file(REPO / config["manifest"], relpath, root=REPO / "resources"))

    mcq = load_mcq("mmlu", fetched(pos["benchmarks"]["mmlu"]["path"]), seed=config["seed"])
    items = sample_rows(four_option_items(mcq), n_questions, config["seed"], "item_id", salt="position")
    prompts = permutations_table(items, "cyclic")
    spec = load_model_spec(str(REPO / config["registry"]), "smollm2-135m",
                           weights=fetched("resources/models/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf"))
    mode = args.mode
    think = arm_prefill(spec, "think") if mode == "reasoning" else ""
    reqs = build_requests(prompts, mode, think, arm_prefill(spec, "nothink"), thinking_instruction(spec), max_tokens)

    with tempfile.TemporaryDirectory() as tmp:
        cache, fresh = Path(tmp) / "cache", Path(tmp) / "fresh"
        with open_engine(spec, cache, n_threads=args.threads) as eng:
            t_gen, gens = timed(lambda: eng.generate(reqs))
            n_gen = eng.stats.generated_tokens
        table = generations_table(prompts, spec.id, mode, reqs, gens)
        with open_engine(spec, cache, n_threads=args.threads) as eng:
            t_probe, _ = timed(lambda: probe_depths(eng, reqs, table, mode, spec.think_close, depths))
            probe_tokens = eng.stats.prompt_tokens
        print(f"{len(reqs)} traces ({n_questions} questions x 4 orderings), mode {mode}, {len(depths)} depths {depths}")
        print(f"1. generation                 {t_gen:7.2f} s, {n_gen} tokens generated")
        print(f"2. depth probe (own job)      {t_probe:7.2f} s, {probe_tokens} prompt-side tokens; "
              f"probe / generation = {t_probe / t_gen:.3f}")
        if mode == "reasoning":
            with open_engine(spec, fresh, n_threads=args.threads) as eng:
                t_both, _ = timed(lambda: probe_depths(eng, reqs, table, mode, spec.think_close, depths))
            print(f"3. probe riding on generation {max(0.0, t_both - t_gen):7.2f} s; "
                  f"(generate+probe - generation) / generation = {max(0.0, t_both - t_gen) / t_gen:.3f}")


if __name__ == "__main__":
    main()
