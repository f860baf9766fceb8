"""Building the model calls of an audit: which (concept, input, side) responses a stage still
needs, the target-model requests (single user message, T = 0.7, top-p 0.95, seeded per request),
the target responses with their decisions and the verbalization judge, each run by its
:class:`ModelRole` (spec Sec. 3.7 and 4)."""

from __future__ import annotations

import logging

import pandas as pd

from thinkbias.blindspot.tasks import render_task_prompt
from thinkbias.llm.roles import ModelRole, run_role
from thinkbias.llm.run import Progress, run_requests
from thinkbias.llm.types import Generation, Request, Sampling

RESPONSE_COLUMNS = [
    "concept_id",
    "input_id",
    "side",
    "stage_added",
    "text",
    "decision",
    "forced",
    "completion_tokens",
    "cached",
]


def needed_responses(
    stage_inputs: list[str], active: list[str], variations: pd.DataFrame, previous: pd.DataFrame | None
) -> pd.DataFrame:
    """The (concept, input, side) triples of this stage without a response yet: valid variation
    pairs of active concepts on stage inputs, minus those answered at earlier stages."""
    v = variations[
        variations["concept_id"].isin(active) & variations["input_id"].isin(set(stage_inputs)) & variations["valid"]
    ]
    rows = []
    for r in v.itertuples(index=False):
        rows.append({"concept_id": r.concept_id, "input_id": r.input_id, "side": "pos", "text": r.positive})
        rows.append({"concept_id": r.concept_id, "input_id": r.input_id, "side": "neg", "text": r.negative})
    need = pd.DataFrame(rows, columns=["concept_id", "input_id", "side", "text"])
    if previous is not None and len(previous):
        done = set(zip(previous["concept_id"], previous["input_id"], previous["side"]))
        keep = [(c, i, s) not in done for c, i, s in zip(need["concept_id"], need["input_id"], need["side"])]
        need = need[keep]
    return need.reset_index(drop=True)


def target_requests(items: pd.DataFrame, template: str, job_description: str, role: ModelRole) -> list[Request]:
    """One decision request per row (``concept_id, input_id, side, text``; baseline rows use
    ``concept_id == ""`` and ``side == "base"``), seeded by the item alone."""
    return [
        role.chat(render_task_prompt(template, r.text, job_description), r.concept_id, r.input_id, r.side)
        for r in items.itertuples(index=False)
    ]


def response_text(gen: Generation) -> str:
    """The visible response a judge reads: the whole generated text (CoT and answer); for APIs
    that return only ``answer`` (message content), that."""
    return gen.text if gen.text else gen.answer


def run_targets(
    role: ModelRole, requests: list[Request], task: str, force_decision: bool, logger: logging.Logger
) -> pd.DataFrame:
    """Target responses with their parsed decisions: ``text, decision, forced, completion_tokens,
    cached``, one row per request.

    With ``force_decision``, a response whose decision does not parse is continued after the task's
    cue (e.g. "Final Decision:") and the likelier of the two decision words is taken (the engine's
    candidate scoring); ``forced`` marks those rows so reports can count them. Off in the paper's
    setting, where unparsable decisions are excluded.
    """
    from thinkbias.blindspot.tasks import decision_candidates, task_spec

    cols = ["text", "decision", "forced", "completion_tokens", "cached"]
    if not requests:
        Progress(0, logger).finish()  # an LLM job with nothing to ask still reports its (zero) tokens
        return pd.DataFrame(columns=cols)
    from thinkbias.llm import load_model_spec, open_engine

    spec_task = task_spec(task)
    spec = load_model_spec(role.registry, role.model, weights=role.weights)
    candidates = decision_candidates(spec_task)

    def force(engine, undecided: list[int]) -> None:
        cued = [
            Request(
                messages=requests[i].messages,
                prefill=requests[i].prefill + texts[i] + spec_task.decision_cue,
                sampling=Sampling(max_tokens=1),
            )
            for i in undecided
        ]
        for i, scores in zip(undecided, engine.score_many(cued, candidates)):
            word = max(spec_task.decision_words, key=lambda w: scores.probs.get(w, 0.0))
            texts[i] = texts[i] + spec_task.decision_cue + " " + word
            decisions[i] = spec_task.parser(texts[i])
            forced[i] = True

    with open_engine(spec, role.cache_dir, n_threads=role.n_threads) as engine:
        if force_decision and engine.scores_after_generation() and not engine.batches_generation():
            # score right after each generation, while the response is still in the KV cache
            progress = Progress(len(requests), logger, engine=engine)
            gens, texts, decisions, forced = [], [], [], []
            for i, req in enumerate(requests):
                g = engine.generate([req])[0]
                progress.update(g)
                gens.append(g)
                texts.append(response_text(g))
                decisions.append(spec_task.parser(texts[-1]))
                forced.append(False)
                if decisions[-1] is None:
                    force(engine, [i])
            progress.finish()
        else:  # all at once: a batched engine scores the undecided ones together (score_many)
            gens = run_requests(engine, requests, logger)
            texts = [response_text(g) for g in gens]
            decisions = [spec_task.parser(t) for t in texts]
            forced = [False] * len(texts)
            if force_decision:
                force(engine, [i for i, d in enumerate(decisions) if d is None])
        if any(forced):
            logger.info(f"forced a decision on {sum(forced)}/{len(texts)} responses without a parsable one")
    return pd.DataFrame(
        {
            "text": texts,
            "decision": pd.Series(decisions, dtype="float"),
            "forced": forced,
            "completion_tokens": [g.completion_tokens for g in gens],
            "cached": [g.cached for g in gens],
        }
    )


def run_judge(
    items: pd.DataFrame,
    concepts: pd.DataFrame,
    inputs: pd.DataFrame,
    task: str,
    task_template: str,
    job_description: str,
    judge_template: str,
    method: str,
    role: ModelRole,
    logger: logging.Logger,
    previous: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The verbalization judge on ``items`` (``concept_id, input_id, side, text``) with the ORIGINAL
    task prompt of each input, the autorater run by ``role``; see
    :func:`thinkbias.blindspot.verbalization.judge`."""
    from thinkbias.blindspot.verbalization import VERDICT_SCHEMA, judge

    by_input = inputs.set_index("input_id")["text"]
    prompts = {i: render_task_prompt(task_template, by_input[i], job_description) for i in set(items["input_id"])}

    def sampling_for(key: str) -> Sampling:
        return role.sampling("verbalization", key, json_schema=VERDICT_SCHEMA)

    def run(reqs):
        return run_role(role, reqs, logger)

    out = judge(items, concepts, prompts, method, judge_template, sampling_for, run, previous)
    if method == "autorater" and not out["new"].any():  # every verdict known: the autorater was not run
        Progress(0, logger).finish()
    logger.info(
        f"verbalization ({method}): {len(out)} verdicts, {int(out['new'].sum())} judged now, "
        f"{int(out['verbalized'].isna().sum())} unparsable (counted as not verbalized)"
    )
    return out


def pairs_from_responses(responses: pd.DataFrame) -> pd.DataFrame:
    """``concept_id, input_id, y_pos, y_neg`` from long responses (one row per side)."""
    if responses.empty:
        return pd.DataFrame(columns=["concept_id", "input_id", "y_pos", "y_neg"])
    wide = responses.pivot_table(
        index=["concept_id", "input_id"], columns="side", values="decision", aggfunc="first", dropna=False
    )
    wide = wide.reindex(columns=["pos", "neg"])
    wide.columns = ["y_pos", "y_neg"]
    return wide.reset_index()


def verdict_pairs(verdicts: pd.DataFrame) -> pd.DataFrame:
    """``concept_id, input_id, verbalized_pos, verbalized_neg`` from long verdicts."""
    if verdicts.empty:
        return pd.DataFrame(columns=["concept_id", "input_id", "verbalized_pos", "verbalized_neg"])
    rows = {}
    for r in verdicts.itertuples(index=False):
        rows.setdefault((r.concept_id, r.input_id), {})[r.side] = r.verbalized
    return pd.DataFrame(
        [
            {"concept_id": c, "input_id": i, "verbalized_pos": v.get("pos"), "verbalized_neg": v.get("neg")}
            for (c, i), v in rows.items()
        ]
    )
