"""Truncation intervention, one shard of questions: cut each selected trajectory around its CCP and
resume it several times with nucleus sampling from the cut inside the assistant turn.

Computes `thinkbias.position.truncation:plan_cuts` and `thinkbias.position.truncation:assistant_prefix`,
run by `thinkbias.llm.roles:run_role`, then `thinkbias.position.truncation:continuation_outcomes`.
"""

import pandas as pd

from thinkbias.llm import Sampling, load_model_spec
from thinkbias.llm.roles import ModelRole, run_role
from thinkbias.llm.thinking import thinking_instruction
from thinkbias.position.generation import prompt_request
from thinkbias.position.truncation import (
    assistant_prefix,
    continuation_outcomes,
    continuation_seed,
    plan_cuts,
    preferred_position,
    select_trajectories,
)
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0], metrics=snakemake.output.metrics) as logger:
    p = snakemake.params
    t = p.truncation
    records = pd.read_parquet(snakemake.input.records)
    prompts = pd.read_parquet(snakemake.input.prompts).set_index(["question_id", "permutation"])
    selected = select_trajectories(records, t["n_questions"])
    q0 = int(snakemake.wildcards.shard) * t["questions_per_shard"]
    selected = selected.iloc[q0 : q0 + t["questions_per_shard"]]
    cuts, dropped = plan_cuts(selected, t["offsets"])
    logger.info(f"{len(selected)} questions, {len(cuts)} cuts ({dropped} outside [0, 1] dropped)")
    preferred = preferred_position(records, t["preferred_position"])
    rows, requests = [], []
    if len(cuts):
        role = ModelRole.from_params(p, snakemake.input.weights, n_threads=snakemake.threads)
        spec = load_model_spec(role.registry, role.model, weights=role.weights)
        instruction = thinking_instruction(spec)
        by_key = selected.set_index(["question_id", "permutation"])
        for cut in cuts.itertuples(index=False):
            rec = by_key.loc[(cut.question_id, cut.permutation)]
            assistant_text = (rec["prefill"] or "") + (rec["text"] or "")
            prefix = assistant_prefix(cut.cut_char, rec["thinking"], rec["answer"], assistant_text)
            prompt = prompts.loc[(cut.question_id, cut.permutation)]
            for c in range(int(t["n_continuations"])):
                sampling = Sampling(
                    temperature=float(t["temperature"]),
                    top_p=float(t["top_p"]),
                    seed=continuation_seed(p.seed, cut.question_id, cut.offset_index, c),
                    max_tokens=int(t["max_tokens"]),
                )
                requests.append(prompt_request(prompt, snakemake.wildcards.mode, prefix, instruction, sampling))
                rows.append(
                    {
                        **cut._asdict(),
                        "continuation": c,
                        "prefix_chars": len(prefix),
                        "original_prefix": rec["full_text"][: cut.cut_char],
                    }
                )
        gens = run_role(role, requests, logger)
        resumed = [r["original_prefix"] + g.text for r, g in zip(rows, gens)]
        table = pd.DataFrame(rows).drop(columns=["original_prefix"])
        table["continuation_text"] = [g.text for g in gens]
        table["continuation_tokens"] = [g.completion_tokens for g in gens]
        table["resumed_length"] = [len(x) for x in resumed]
        outcomes = continuation_outcomes(table, resumed, preferred)
    else:
        outcomes = pd.DataFrame(
            columns=[
                "question_id",
                "permutation",
                "offset_index",
                "offset",
                "ccp",
                "cut",
                "cut_char",
                "side",
                "original_answer",
                "continuation",
                "new_answer",
                "extraction_status",
                "changed",
                "toward_preferred",
                "preferred_position",
            ]
        )
    for col, val in (
        ("benchmark", snakemake.wildcards.benchmark),
        ("model", p.model),
        ("mode", snakemake.wildcards.mode),
    ):
        outcomes.insert(0, col, val)
    outcomes.attrs = {}
    outcomes["n_dropped_cuts_in_shard"] = dropped
    outcomes.to_parquet(snakemake.output[0], index=False)
