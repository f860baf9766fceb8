"""Both arms, force-closing and CDPG probes on the embedded model (real llama.cpp runs)."""

import math

import pandas as pd
import pytest

from thinkbias.fairness.generation import (
    ANSWER_CUE,
    assemble_predictions,
    cost_summary,
    force_close_request,
    generate_and_probe_arm,
    probe_cue,
    retained_pairs,
)
from thinkbias.fairness.cdpg import depth_fractions
from thinkbias.fairness.predictions import depth_column
from thinkbias.fairness.schema import validate_predictions
from thinkbias.fairness.prompts import build_prompts

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def engine(embedded_model):
    from thinkbias.llm import load_model_spec, open_engine

    spec = load_model_spec("config/models.yaml", "smollm2-135m", weights=str(embedded_model))
    with open_engine(spec, None, n_threads=1) as eng:
        yield eng


@pytest.fixture(scope="module")
def prompts():
    rows = pd.DataFrame(
        [
            dict(
                record_id="r1",
                age=39,
                workclass="Private",
                education="Bachelors",
                education_num=13,
                marital_status="Never-married",
                occupation="Sales",
                sex="Male",
                capital_gain=0,
                capital_loss=0,
                hours_per_week=40,
                native_country="United-States",
                income_gt_50k=False,
            )
        ]
    )
    return build_prompts("adult", rows)


def fresh_probes(engine, gens: pd.DataFrame, Ks) -> pd.DataFrame:
    """P(Yes) of each side computed afresh, apart from the generation pass: ``Engine.score`` after the
    nothink answer cue; ``Engine.probe`` of the think trace at cut floor(k*T/K + 1/2) of every K."""
    from thinkbias.llm import YES_NO, Request
    from thinkbias.llm.thinking import arm_prefill

    cue, rows = probe_cue(engine.spec.think_close), []
    for r in gens.to_dict(orient="records"):
        row = {"pair_id": r["pair_id"], "side": r["side"], "arm": r["arm"]}
        if r["arm"] == "nothink":
            req = Request.chat(r["user_sent"], prefill=arm_prefill(engine.spec, "nothink") + ANSWER_CUE)
            row["p_yes"] = engine.score(req, YES_NO).probs["Yes"]
        else:
            T = engine.count_tokens(r["thinking"]) if r["thinking"] else 0
            cuts = {(K, k): math.floor(k * T / K + 0.5) for K in Ks for k in range(K + 1)}
            distinct = sorted(set(cuts.values()))
            req = Request.chat(r["user_sent"], prefill=arm_prefill(engine.spec, "think"))
            by_cut = dict(zip(distinct, engine.probe(req, r["thinking"], distinct, cue, YES_NO)))
            row.update({depth_column(K, k): by_cut[c].probs["Yes"] for (K, k), c in cuts.items()})
        rows.append(row)
    return pd.DataFrame(rows)


def test_arms_probes_and_force_close(engine, prompts):
    think, tp = generate_and_probe_arm(engine, prompts, "think", 4, 4, [2, 4])
    nothink, np_ = generate_and_probe_arm(engine, prompts, "nothink", 4, 4, [2, 4])
    assert len(think) == len(nothink) == 2
    # 4 tokens never close a prompt-elicited trace: every think answer comes from the force-close request
    assert think["forced_close"].all()
    assert set(think["status"]) <= {"ok", "refusal", "unparsed"}
    gens = pd.concat([think, nothink], ignore_index=True)
    probes = pd.concat([tp, np_], ignore_index=True)
    assert len(probes) == 4
    t = probes[probes.arm == "think"]
    for K in (2, 4):
        for k in range(K + 1):
            assert t[depth_column(K, k)].between(0, 1).all()
    # the same relative depth gives the same probe at K = 2 and K = 4
    assert (t[depth_column(2, 1)] == t[depth_column(4, 2)]).all()
    # full depth = the force-close context, scored independently with Engine.score
    from thinkbias.llm import YES_NO

    row = think.iloc[0]
    req = force_close_request(engine.spec, prompts.user.iloc[0], row.thinking, 4)
    direct = engine.score(req, YES_NO).probs["Yes"]
    assert t.iloc[0][depth_column(4, 4)] == pytest.approx(direct, abs=0.05)
    assert req.prefill.endswith(probe_cue(engine.spec.think_close)) and req.prefill.endswith(ANSWER_CUE)
    pred = validate_predictions(assemble_predictions(gens, probes, "smollm2-135m", 4))
    assert len(pred) == 4 and pred["p_yes"].notna().all()
    cost = cost_summary(gens, probes, "smollm2-135m", "adult")
    assert cost["think_probe_tokens_naive"] >= cost["think_probe_tokens_reused"] > 0
    assert cost["generated_tokens"] == int(gens.completion_tokens.sum())
    assert retained_pairs(gens) <= {"r1"}


def test_probes_ride_on_generation_and_full_depth_is_the_force_close_context(embedded_model, prompts):
    """The pipeline's path: each arm generates and probes in one pass. Full depth = the force-close
    context; the fused probes evaluate only cue tokens (no prefill of prompt + trace again)."""
    from thinkbias.llm import load_model_spec, open_engine

    spec = load_model_spec("config/models.yaml", "smollm2-135m", weights=str(embedded_model))
    with open_engine(spec, None, n_threads=1) as engine:  # empty cache: nothing generated before
        _fused_checks(engine, prompts)


def _fused_checks(engine, prompts):
    from thinkbias.llm import YES_NO

    Ks = [2, 4]
    before = engine.stats.prompt_tokens
    think, tp = generate_and_probe_arm(engine, prompts, "think", 4, 4, Ks)
    nothink, np_ = generate_and_probe_arm(engine, prompts, "nothink", 4, 4, Ks)
    spent = engine.stats.prompt_tokens - before
    # the generations are those of the generation-only path
    pd.testing.assert_frame_equal(think, generate_and_probe_arm(engine, prompts, "think", 4, 4, None)[0])
    pd.testing.assert_frame_equal(nothink, generate_and_probe_arm(engine, prompts, "nothink", 4, 4, None)[0])
    assert think["forced_close"].all() and len(tp) == len(np_) == 2
    cue = engine.count_tokens(probe_cue(engine.spec.think_close))
    # think: one cue per distinct cut of the generated trace (at most one per depth k/K), plus the last
    # generated token when the deepest cut reaches it (sampled, never decoded), nothing else (no prefill);
    # nothink: only the answer cue after the generated answer
    ev = tp["probe_tokens_evaluated"]
    assert ((ev > 0) & (ev <= len(depth_fractions(Ks)) * cue + 1)).all()
    assert (np_["probe_tokens_evaluated"] <= engine.count_tokens(ANSWER_CUE) + 2).all()
    forced_prefill = (
        spent
        - int(think.prompt_tokens.sum())
        - int(nothink.prompt_tokens.sum())
        - int(tp.probe_tokens_evaluated.sum())
        - int(np_.probe_tokens_evaluated.sum())
    )
    assert forced_prefill > 0  # the force-close follow-ups are the only other prompt tokens
    gens = pd.concat([think, nothink], ignore_index=True)
    later = fresh_probes(engine, gens, Ks)
    fused = pd.concat([tp, np_], ignore_index=True)
    m = fused.merge(later, on=["pair_id", "side", "arm"], suffixes=("", "_later"))
    # nothink scores and the empty-trace probe (no decoded cells involved) equal the later job exactly
    nt = m[m.arm == "nothink"]
    assert (nt["p_yes"] == nt["p_yes_later"]).all()
    t = m[m.arm == "think"]
    # the empty-trace probe appends the cue after the prompt and the newline the model wrote after the
    # open tag (decoded, and not part of the stored trace); this helper's later probe reads the prompt
    # and the cue in one batch. Measured 0.022 apart on the embedded model: close, as the full-depth
    # probe below (docs/engine.md).
    assert t[depth_column(4, 0)].to_numpy() == pytest.approx(t[depth_column(4, 0) + "_later"].to_numpy(), abs=0.05)
    assert (t[depth_column(2, 1)] == t[depth_column(4, 2)]).all()
    for i, row in think.iterrows():
        req = force_close_request(engine.spec, prompts.user.iloc[i], row.thinking, 4)
        direct = engine.score(req, YES_NO).probs["Yes"]
        full = t.set_index("side").loc[row.side]
        # later job: batched like the score, so equal; fused: decoded trace cells, close (docs/engine.md)
        assert full[depth_column(4, 4) + "_later"] == pytest.approx(direct, abs=1e-9)
        assert full[depth_column(4, 4)] == pytest.approx(direct, abs=0.05)
        assert full["p_yes"] == full[depth_column(4, 4)]
    pred = validate_predictions(assemble_predictions(gens, fused, "smollm2-135m", 4))
    assert len(pred) == 4 and pred["p_yes"].notna().all()
    cost = cost_summary(gens, fused, "smollm2-135m", "adult")
    assert cost["think_probe_tokens_evaluated"] < cost["think_probe_tokens_reused"] <= cost["think_probe_tokens_naive"]


def test_probe_tokens_attributed_per_request_or_shared_after_a_batch():
    from thinkbias.fairness.generation import _attribute

    assert _attribute([40, 0, 16], [5, 1, 2], as_reported=True) == [40, 0, 16]  # probed as each finished
    # a batched engine probes after the batch: the first report carries all the work
    assert _attribute([80, 0, 0], [4, 2, 2], as_reported=False) == [40, 20, 20]
    assert _attribute([100, 0, 0], [1, 1, 1], as_reported=False) == [33, 33, 34]


def test_batched_engine_gives_the_sequential_arms_and_scores_only_the_cue(engine, embedded_model, prompts):
    """With ``extra.n_parallel`` > 1 both arms give the sequential engine's answers and P(Yes); the
    nothink scores are read on each sequence's own cells, so only the answer cue is evaluated (before,
    the score prefilled the whole prompt again on the engine's own context)."""
    from dataclasses import replace

    from thinkbias.llm import open_engine

    Ks = [2, 4]
    spec = replace(engine.spec, extra={**engine.spec.extra, "n_parallel": 2})
    with open_engine(spec, None, n_threads=1) as batched:
        assert batched.batches_generation()
        for arm in ("nothink", "think"):
            gens, probes = generate_and_probe_arm(batched, prompts, arm, 4, 4, Ks)
            ref_gens, ref_probes = generate_and_probe_arm(engine, prompts, arm, 4, 4, Ks)
            pd.testing.assert_frame_equal(gens, ref_gens)
            cols = [c for c in probes.columns if probes[c].dtype.kind == "f"]
            assert (probes[cols] - ref_probes[cols]).abs().max().max() < 1e-4, arm
        n_cue = engine.count_tokens(ANSWER_CUE)
        _, nothink = generate_and_probe_arm(batched, prompts.assign(user=prompts["user"] + " "), "nothink", 4, 4, Ks)
    # the cue and the prompt tokens its first token merges with, as sequentially (test above)
    assert (nothink["probe_tokens_evaluated"] <= n_cue + 2).all() and nothink["probe_tokens_evaluated"].sum() > 0
