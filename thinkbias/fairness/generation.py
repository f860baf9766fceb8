"""Both arms of the study on one model: requests, force-closing, CDPG probes (paper §4.1, §3.3).

think arm:   user message (+ the registry's thinking instruction for prompt-elicited models), assistant
             prefill ``arm_prefill(spec, "think")``, greedy, ``think_budget`` new tokens. If the trace is
             not closed within the budget (or it closed but the answer is empty or was cut off unparsed), the
             answer is *force-closed*: a follow-up request whose prefill is the think prefill + trace
             + "\\n" + think_close + "\\n\\n" + ANSWER_CUE, generating ``answer_budget`` tokens.
nothink arm: the same user message without the thinking instruction, prefill
             ``arm_prefill(spec, "nothink")`` (an empty closed think block), greedy, ``answer_budget``
             tokens.
Probes:      read in the same pass as generation (``generate_and_probe_arm``). think: P(Yes) after prompt +
             think prefill + first cut tokens of the trace + probe cue, for the union of cuts over every K
             (``Engine.generate_and_probe_many`` with the fractions k/K; on llama.cpp each distinct cut costs
             only the cue tokens on the KV state generation left); the probe cue "\\n" + think_close +
             "\\n\\n" + ANSWER_CUE is the same at every depth, so depth K equals the force-close context.
             nothink: P(Yes) after the nothink prefill + ANSWER_CUE (``Engine.score`` right after the answer,
             reusing the prompt in the KV cache).
             Cut points index the thinking tokens of the think arm's *first* request as generated: after the
             think prefill (or the model's own open tag) up to the close tag, or up to the budget when the model
             did not close; a force-closed side's follow-up continues exactly that trace.
             These fused probes and ``Engine.probe`` of the same prefix afresh differ slightly in logits
             (decoded vs batched KV cells, docs/engine.md).
"""

from __future__ import annotations

import logging
from fractions import Fraction
from typing import Sequence

import numpy as np
import pandas as pd

from thinkbias.fairness.cdpg import depth_fractions, union_cuts
from thinkbias.fairness.parse import parse_yes_no
from thinkbias.fairness.predictions import depth_column
from thinkbias.llm.types import YES_NO, Request, Sampling

ANSWER_CUE = "Answer:"
COST_COLUMNS = (
    "outside_mass",
    "trace_tokens",
    "n_cuts",
    "probe_tokens_naive",
    "probe_tokens_reused",
    "probe_tokens_evaluated",
)

GEN_COLUMNS = [
    "dataset",
    "pair_id",
    "side",
    "attribute",
    "arm",
    "user_sent",
    "thinking",
    "answer_text",
    "answer",
    "status",
    "forced_close",
    "finish_reason",
    "prompt_tokens",
    "completion_tokens",
]


def probe_cue(think_close: str) -> str:
    """Text appended after a (truncated) trace to close the think block and ask for the answer."""
    return "\n" + think_close + "\n\n" + ANSWER_CUE


def think_user(spec, user: str) -> str:
    """The think arm's user message: the thinking instruction is added for prompt-elicited models."""
    from thinkbias.llm.thinking import thinking_instruction

    return f"{user}\n\n{thinking_instruction(spec)}" if spec.thinking == "prompt" else user


def think_request(spec, user: str, think_budget: int) -> Request:
    from thinkbias.llm.thinking import arm_prefill

    return Request.chat(
        think_user(spec, user),
        prefill=arm_prefill(spec, "think"),
        sampling=Sampling(temperature=0.0, max_tokens=think_budget),
    )


def force_close_request(spec, user: str, thinking: str, answer_budget: int) -> Request:
    from thinkbias.llm.thinking import arm_prefill

    prefill = arm_prefill(spec, "think") + thinking + probe_cue(spec.think_close)
    return Request.chat(
        think_user(spec, user), prefill=prefill, sampling=Sampling(temperature=0.0, max_tokens=answer_budget)
    )


def nothink_request(spec, user: str, answer_budget: int) -> Request:
    from thinkbias.llm.thinking import arm_prefill

    return Request.chat(
        user, prefill=arm_prefill(spec, "nothink"), sampling=Sampling(temperature=0.0, max_tokens=answer_budget)
    )


def _gen_row(r: dict, arm: str, req: Request, g) -> dict:
    answer, status = parse_yes_no(g.answer)
    return {
        "dataset": r["dataset"],
        "pair_id": r["pair_id"],
        "side": r["side"],
        "attribute": r["attribute"],
        "arm": arm,
        "user_sent": req.messages[-1][1],
        "thinking": g.thinking if arm == "think" else "",
        "answer_text": g.answer,
        "answer": answer,
        "status": status,
        "forced_close": False,
        "finish_reason": g.finish_reason,
        "prompt_tokens": g.prompt_tokens,
        "completion_tokens": g.completion_tokens,
    }


def _needs_force_close(spec, req: Request, g, row: dict) -> bool:
    closed = spec.think_close in (req.prefill + g.text)
    cut_off = row["status"] != "ok" and (g.finish_reason == "length" or not g.answer.strip())
    return not closed or cut_off


class _ProbeCounter:
    """Per request: the prompt-side tokens the engine evaluated for its scores and probes (its
    ``probe_tokens`` counter), read as each result arrives."""

    def __init__(self, engine):
        self.engine, self.last = engine, _evaluated(engine)

    def take(self) -> int:
        now = _evaluated(self.engine)
        spent, self.last = now - self.last, now
        return spent


def _attribute(spent: list[int], weights: list[int], as_reported: bool) -> list[int]:
    """Per-request probe tokens. An engine that probes each result as it finishes (llama.cpp,
    sequential or batched: ``as_reported``) gives them directly; a batched engine (vLLM) probes
    after the whole batch, so its reports do not say whose work was whose: then the total is shared
    in proportion to ``weights`` (distinct cuts)."""
    if as_reported:
        return spent
    total, w = max(0, sum(spent)), max(1, sum(weights))
    out = [total * x // w for x in weights]
    if out:
        out[-1] += total - sum(out)
    return out


def generate_and_probe_arm(
    engine,
    prompts: pd.DataFrame,
    arm: str,
    think_budget: int,
    answer_budget: int,
    Ks: Sequence[int] | None,
    logger: logging.Logger | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Generate one arm for every (pair, side) row of ``prompts``, parse Yes/No, and (``Ks`` given)
    read its P(Yes) probes in the same pass (see module doc). Returns (generations, probes).

    think: ``Engine.generate_and_probe_many`` over the union of depths k/K (``depth_fractions``) with
    the cue ``probe_cue``: the probes run on the KV state generation left (llama.cpp: only the cue
    tokens are evaluated per distinct cut; vLLM: one batch with prefix caching). The cut points index
    the tokens of the *first* request's thinking span (after the think prefill or the model's own open
    tag, up to its close tag or, when the model did not close within ``think_budget``, to the last
    generated token). A force-closed side's follow-up appends ``probe_cue`` to exactly that trace, so
    its full-depth probe P_K is the force-close context; the follow-up answer itself comes from a fresh
    request on the re-tokenised text.
    nothink: each answer is generated and then scored after nothink prefill + ANSWER_CUE
    (``Engine.generate_and_score_many``: on llama.cpp the score reuses the prompt already in the KV
    cache, sequential or batched).
    """
    from thinkbias.llm.run import Progress, run_requests

    logger = logger or logging.getLogger(__name__)
    spec = engine.spec
    rows = prompts.to_dict(orient="records")
    if not rows:
        return pd.DataFrame(columns=GEN_COLUMNS), pd.DataFrame()
    probes: list[dict] = []
    if arm == "nothink":
        reqs = [nothink_request(spec, r["user"], answer_budget) for r in rows]
        if Ks is None:
            gens = run_requests(engine, reqs, logger)
        else:
            progress = Progress(len(reqs), logger, label="generate+score", engine=engine)
            logger.info("generate+score: %d requests on model %s", len(reqs), spec.id)
            counter, spent = _ProbeCounter(engine), [0] * len(reqs)
            n_ans = engine.count_tokens(ANSWER_CUE)

            def scored(i, g):
                spent[i] = counter.take()
                progress.update(g)

            score_reqs = [Request.chat(q.messages[-1][1], prefill=q.prefill + ANSWER_CUE) for q in reqs]
            pairs = engine.generate_and_score_many(reqs, score_reqs, YES_NO, on_result=scored)
            progress.finish()
            gens = [g for g, _ in pairs]
            spent = _attribute(spent, [1] * len(reqs), engine.scores_after_generation())
            for i, (r, (g, sc)) in enumerate(zip(rows, pairs)):
                probes.append(
                    {
                        "pair_id": r["pair_id"],
                        "side": r["side"],
                        "arm": arm,
                        "p_yes": sc.probs["Yes"],
                        "outside_mass": sc.outside_mass,
                        "trace_tokens": 0,
                        "n_cuts": 1,
                        "probe_tokens_naive": g.prompt_tokens + n_ans,
                        "probe_tokens_reused": g.prompt_tokens + n_ans,
                        "probe_tokens_evaluated": spent[i],
                    }
                )
        return pd.DataFrame(
            [_gen_row(r, arm, q, g) for r, q, g in zip(rows, reqs, gens)], columns=GEN_COLUMNS
        ), pd.DataFrame(probes)

    reqs = [think_request(spec, r["user"], think_budget) for r in rows]
    if Ks is None:
        gens = run_requests(engine, reqs, logger)
    else:
        fractions = depth_fractions(Ks)
        index = {f: i for i, f in enumerate(fractions)}
        cue = probe_cue(spec.think_close)
        cue_tokens = engine.count_tokens(cue)
        progress = Progress(len(reqs), logger, label="generate+probe", engine=engine)
        logger.info("generate+probe: %d requests on model %s, %d depths per trace", len(reqs), spec.id, len(fractions))
        counter, spent = _ProbeCounter(engine), [0] * len(reqs)

        def done(i, g):
            spent[i] = counter.take()
            progress.update(g)

        pairs = engine.generate_and_probe_many(reqs, [float(f) for f in fractions], cue, YES_NO, on_result=done)
        progress.finish()
        gens = [g for g, _ in pairs]
        n_cuts = [len(union_cuts(engine.count_tokens(g.thinking) if g.thinking else 0, Ks)) for g in gens]
        spent = _attribute(spent, n_cuts, engine.scores_after_generation())
        for i, (r, (g, scores)) in enumerate(zip(rows, pairs)):
            n_tok = engine.count_tokens(g.thinking) if g.thinking else 0
            cuts = union_cuts(n_tok, Ks)
            row = {"pair_id": r["pair_id"], "side": r["side"], "arm": arm}
            for K in Ks:
                for k in range(K + 1):
                    row[depth_column(K, k)] = scores[index[Fraction(k, K)]].probs["Yes"]
            row.update(
                p_yes=scores[-1].probs["Yes"],
                outside_mass=float(np.mean([s.outside_mass for s in scores])),
                trace_tokens=n_tok,
                n_cuts=len(cuts),
                probe_tokens_naive=int(sum(g.prompt_tokens + c + cue_tokens for c in cuts)),
                probe_tokens_reused=int(g.prompt_tokens + max(cuts) + len(cuts) * cue_tokens),
                probe_tokens_evaluated=spent[i],
            )
            probes.append(row)
    out = [_gen_row(r, arm, q, g) for r, q, g in zip(rows, reqs, gens)]
    follow_idx = [i for i, (q, g) in enumerate(zip(reqs, gens)) if _needs_force_close(spec, q, g, out[i])]
    if follow_idx:
        logger.info("force-closing %d of %d think traces", len(follow_idx), len(rows))
        follow_reqs = [force_close_request(spec, rows[i]["user"], gens[i].thinking, answer_budget) for i in follow_idx]
        for i, g in zip(follow_idx, run_requests(engine, follow_reqs, logger)):
            answer, status = parse_yes_no(g.text)
            out[i].update(
                answer_text=g.text,
                answer=answer,
                status=status,
                forced_close=True,
                completion_tokens=out[i]["completion_tokens"] + g.completion_tokens,
            )
    return pd.DataFrame(out, columns=GEN_COLUMNS), pd.DataFrame(probes)


def retained_pairs(gens: pd.DataFrame) -> set[str]:
    """Pair ids whose answers parse on both sides in both arms (within these generations)."""
    ok = gens[gens["status"] == "ok"].groupby("pair_id").size()
    return set(ok[ok == 4].index)


def _evaluated(engine) -> int:
    """Prompt-side tokens the engine has evaluated for scores and probes so far in this process (0
    if it keeps no stats)."""
    stats = getattr(engine, "stats", None)
    return int(getattr(stats, "probe_tokens", 0)) if stats is not None else 0


def assemble_predictions(gens: pd.DataFrame, probes: pd.DataFrame, model: str, main_K: int) -> pd.DataFrame:
    """Join generations and probes of one setting into the predictions schema (see predictions.py).

    The think arm's ``p_yes`` is P(Yes) at full depth (k = K of the main K), i.e. after the whole trace.
    """
    keys = ["pair_id", "side", "arm"]
    g = gens[["dataset", "pair_id", "side", "attribute", "arm", "answer", "status"]].copy()
    p = probes.drop(columns=[c for c in probes.columns if c in COST_COLUMNS])
    out = g.merge(p, on=keys, how="left") if len(p) else g.assign(p_yes=np.nan)
    full = depth_column(main_K, main_K)
    if full in out.columns:
        think = out["arm"] == "think"
        out.loc[think, "p_yes"] = out.loc[think, full]
    out.insert(1, "model", model)
    return out.sort_values(["pair_id", "side", "arm"], kind="stable").reset_index(drop=True)


def cost_summary(gens: pd.DataFrame, probes: pd.DataFrame, model: str, dataset: str) -> dict:
    """Token counts of one setting: generation (prompt, generated) and probing per arm: naive (every
    prefix re-fed), reused (what a later probe job with prefix reuse would evaluate) and evaluated
    (what the engine evaluated in this run, probing on the generation's KV state; 0 when cached)."""
    row = {
        "model": model,
        "dataset": dataset,
        "requests": len(gens),
        "forced_close": int(gens["forced_close"].sum()) if len(gens) else 0,
    }
    for arm in ("nothink", "think"):
        ga = gens[gens["arm"] == arm]
        pa = probes[probes["arm"] == arm] if len(probes) else probes
        row[f"{arm}_prompt_tokens"] = int(ga["prompt_tokens"].sum())
        row[f"{arm}_generated_tokens"] = int(ga["completion_tokens"].sum())
        row[f"{arm}_probe_calls"] = int(pa["n_cuts"].sum()) if len(pa) else 0
        row[f"{arm}_probe_tokens_naive"] = int(pa["probe_tokens_naive"].sum()) if len(pa) else 0
        row[f"{arm}_probe_tokens_reused"] = int(pa["probe_tokens_reused"].sum()) if len(pa) else 0
        row[f"{arm}_probe_tokens_evaluated"] = int(pa["probe_tokens_evaluated"].sum()) if len(pa) else 0
    gen = row["nothink_generated_tokens"] + row["think_generated_tokens"]
    row["generated_tokens"] = gen
    row["probe_tokens_reused"] = row["nothink_probe_tokens_reused"] + row["think_probe_tokens_reused"]
    row["probe_tokens_naive"] = row["nothink_probe_tokens_naive"] + row["think_probe_tokens_naive"]
    row["probe_tokens_evaluated"] = row["nothink_probe_tokens_evaluated"] + row["think_probe_tokens_evaluated"]
    row["prompt_tokens"] = row["nothink_prompt_tokens"] + row["think_prompt_tokens"]
    row["probe_over_generated_reused"] = row["probe_tokens_reused"] / gen if gen else np.nan
    row["probe_over_generated_naive"] = row["probe_tokens_naive"] / gen if gen else np.nan
    fwd = gen + row["prompt_tokens"]
    row["probe_over_generation_forward_reused"] = row["probe_tokens_reused"] / fwd if fwd else np.nan
    return row
