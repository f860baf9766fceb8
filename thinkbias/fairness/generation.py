"""Both arms of the study on one model: requests, force-closing, CDPG probes (paper §4.1, §3.3).

think arm:   user message (+ the registry's thinking instruction for prompt-elicited models), assistant
             prefill ``arm_prefill(spec, "think")``, greedy, ``think_budget`` new tokens. If the trace is
             not closed within the budget (or it closed but the answer is empty or was cut off unparsed), the
             answer is *force-closed*: a follow-up request whose prefill is the think prefill + trace
             + "\\n" + think_close + "\\n\\n" + ANSWER_CUE, generating ``answer_budget`` tokens.
nothink arm: the same user message without the thinking instruction, prefill
             ``arm_prefill(spec, "nothink")`` (an empty closed think block), greedy, ``answer_budget``
             tokens.
Probes:      think: P(Yes) after prompt + think prefill + first cut tokens of the trace + probe cue,
             for the union of cuts over every K (one ``Engine.probe`` call per side); the probe cue
             "\\n" + think_close + "\\n\\n" + ANSWER_CUE is the same at every depth, so depth K equals the
             force-close context. nothink: P(Yes) after the nothink prefill + ANSWER_CUE (``Engine.score``).
"""

from __future__ import annotations

import logging
from typing import Sequence

import numpy as np
import pandas as pd

from thinkbias.fairness.cdpg import depth_cuts, union_cuts
from thinkbias.fairness.parse import parse_yes_no
from thinkbias.fairness.predictions import depth_column
from thinkbias.llm.types import YES_NO, Request, Sampling

ANSWER_CUE = "Answer:"
COST_COLUMNS = ("outside_mass", "trace_tokens", "n_cuts", "probe_tokens_naive", "probe_tokens_reused",
                "probe_tokens_evaluated")

GEN_COLUMNS = ["dataset", "pair_id", "side", "attribute", "arm", "user_sent", "thinking", "answer_text", "answer",
               "status", "forced_close", "finish_reason", "prompt_tokens", "completion_tokens"]


def probe_cue(think_close: str) -> str:
    """Text appended after a (truncated) trace to close the think block and ask for the answer."""
    return "\n" + think_close + "\n\n" + ANSWER_CUE


def think_user(spec, user: str) -> str:
    """The think arm's user message: the thinking instruction is added for prompt-elicited models."""
    from thinkbias.llm.thinking import thinking_instruction

    return f"{user}\n\n{thinking_instruction(spec)}" if spec.thinking == "prompt" else user


def think_request(spec, user: str, think_budget: int) -> Request:
    from thinkbias.llm.thinking import arm_prefill

    return Request.chat(think_user(spec, user), prefill=arm_prefill(spec, "think"),
                        sampling=Sampling(temperature=0.0, max_tokens=think_budget))


def force_close_request(spec, user: str, thinking: str, answer_budget: int) -> Request:
    from thinkbias.llm.thinking import arm_prefill

    prefill = arm_prefill(spec, "think") + thinking + probe_cue(spec.think_close)
    return Request.chat(think_user(spec, user), prefill=prefill,
                        sampling=Sampling(temperature=0.0, max_tokens=answer_budget))


def nothink_request(spec, user: str, answer_budget: int) -> Request:
    from thinkbias.llm.thinking import arm_prefill

    return Request.chat(user, prefill=arm_prefill(spec, "nothink"),
                        sampling=Sampling(temperature=0.0, max_tokens=answer_budget))


def generate_arm(engine, prompts: pd.DataFrame, arm: str, think_budget: int, answer_budget: int,
                 logger: logging.Logger | None = None) -> pd.DataFrame:
    """Generate one arm for every (pair, side) row of ``prompts``; parse Yes/No (see module doc)."""
    from thinkbias.llm.run import run_requests

    logger = logger or logging.getLogger(__name__)
    spec = engine.spec
    rows = prompts.to_dict(orient="records")
    if not rows:
        return pd.DataFrame(columns=GEN_COLUMNS)
    if arm == "nothink":
        reqs = [nothink_request(spec, r["user"], answer_budget) for r in rows]
    else:
        reqs = [think_request(spec, r["user"], think_budget) for r in rows]
    gens = run_requests(engine, reqs, logger)
    out = []
    follow_idx, follow_reqs = [], []
    for i, (r, req, g) in enumerate(zip(rows, reqs, gens)):
        answer, status = parse_yes_no(g.answer)
        closed = arm == "nothink" or spec.think_close in (req.prefill + g.text)
        out.append({"dataset": r["dataset"], "pair_id": r["pair_id"], "side": r["side"], "attribute": r["attribute"],
                    "arm": arm, "user_sent": req.messages[-1][1], "thinking": g.thinking if arm == "think" else "",
                    "answer_text": g.answer, "answer": answer, "status": status, "forced_close": False,
                    "finish_reason": g.finish_reason, "prompt_tokens": g.prompt_tokens,
                    "completion_tokens": g.completion_tokens})
        cut_off = status != "ok" and (g.finish_reason == "length" or not g.answer.strip())
        if arm == "think" and (not closed or cut_off):
            follow_idx.append(i)
            follow_reqs.append(force_close_request(spec, r["user"], g.thinking, answer_budget))
    if follow_reqs:
        logger.info("force-closing %d of %d think traces", len(follow_reqs), len(rows))
        for i, g in zip(follow_idx, run_requests(engine, follow_reqs, logger)):
            answer, status = parse_yes_no(g.text)
            out[i].update(answer_text=g.text, answer=answer, status=status, forced_close=True,
                          completion_tokens=out[i]["completion_tokens"] + g.completion_tokens)
    return pd.DataFrame(out, columns=GEN_COLUMNS)


def retained_pairs(gens: pd.DataFrame) -> set[str]:
    """Pair ids whose answers parse on both sides in both arms (within these generations)."""
    ok = gens[gens["status"] == "ok"].groupby("pair_id").size()
    return set(ok[ok == 4].index)


def _evaluated(engine) -> int:
    """Prompt-side tokens the engine has evaluated so far in this process (0 if it keeps no stats)."""
    stats = getattr(engine, "stats", None)
    return int(getattr(stats, "prompt_tokens", 0)) if stats is not None else 0


def probe_arm(engine, gens: pd.DataFrame, arm: str, Ks: Sequence[int], logger: logging.Logger | None = None,
              only_pairs: set[str] | None = None) -> pd.DataFrame:
    """P(Yes) per (pair, side) of one arm: every depth of every K for think, one score for nothink.

    Also records the probe cost: ``trace_tokens``, ``n_cuts``, ``probe_tokens_naive`` (sum over cuts of
    prompt + cut + cue tokens, i.e. re-feeding each prefix from scratch), ``probe_tokens_reused``
    (prompt and deepest prefix once + the cue at every cut, i.e. with prefix reuse) and
    ``probe_tokens_evaluated`` (tokens the engine actually evaluated now; 0 when served from the cache).
    """
    from thinkbias.llm.thinking import arm_prefill

    logger = logger or logging.getLogger(__name__)
    spec = engine.spec
    sub = gens[gens["arm"] == arm]
    if only_pairs is not None:
        sub = sub[sub["pair_id"].isin(only_pairs)]
    cue = probe_cue(spec.think_close)
    cue_tokens = engine.count_tokens(cue)
    rows = []
    for j, r in enumerate(sub.to_dict(orient="records")):
        base = {"pair_id": r["pair_id"], "side": r["side"], "arm": arm}
        if arm == "nothink":
            req = Request.chat(r["user_sent"], prefill=arm_prefill(spec, "nothink") + ANSWER_CUE)
            before = _evaluated(engine)
            sc = engine.score(req, YES_NO)
            n_ans = engine.count_tokens(ANSWER_CUE)
            rows.append({**base, "p_yes": sc.probs["Yes"], "outside_mass": sc.outside_mass, "trace_tokens": 0,
                         "n_cuts": 1, "probe_tokens_naive": r["prompt_tokens"] + n_ans,
                         "probe_tokens_reused": r["prompt_tokens"] + n_ans,
                         "probe_tokens_evaluated": _evaluated(engine) - before})
            continue
        trace = r["thinking"] or ""
        n_tok = engine.count_tokens(trace) if trace else 0
        cuts = union_cuts(n_tok, Ks)
        req = Request.chat(r["user_sent"], prefill=arm_prefill(spec, "think"))
        before = _evaluated(engine)
        scores = engine.probe(req, trace, cuts, cue, YES_NO)
        by_cut = {c: s for c, s in zip(cuts, scores)}
        row = {**base}
        for K in Ks:
            for k, c in enumerate(depth_cuts(n_tok, K)):
                row[depth_column(K, k)] = by_cut[c].probs["Yes"]
        row.update(p_yes=by_cut[cuts[-1]].probs["Yes"], outside_mass=float(np.mean([s.outside_mass for s in scores])),
                   trace_tokens=n_tok, n_cuts=len(cuts),
                   probe_tokens_naive=int(sum(r["prompt_tokens"] + c + cue_tokens for c in cuts)),
                   probe_tokens_reused=int(r["prompt_tokens"] + max(cuts) + len(cuts) * cue_tokens),
                   probe_tokens_evaluated=_evaluated(engine) - before)
        rows.append(row)
        if (j + 1) % 10 == 0:
            logger.info("probed %d/%d traces", j + 1, len(sub))
    return pd.DataFrame(rows)


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
    """Token counts of one setting: generation (prompt, generated) and probing (naive, reused) per arm."""
    row = {"model": model, "dataset": dataset, "requests": len(gens),
           "forced_close": int(gens["forced_close"].sum()) if len(gens) else 0}
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
    row["prompt_tokens"] = row["nothink_prompt_tokens"] + row["think_prompt_tokens"]
    row["probe_over_generated_reused"] = row["probe_tokens_reused"] / gen if gen else np.nan
    row["probe_over_generated_naive"] = row["probe_tokens_naive"] / gen if gen else np.nan
    fwd = gen + row["prompt_tokens"]
    row["probe_over_generation_forward_reused"] = row["probe_tokens_reused"] / fwd if fwd else np.nan
    return row
