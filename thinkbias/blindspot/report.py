"""The Markdown report of a run beside the paper's reported findings, and the examples page."""

from __future__ import annotations

import math

import pandas as pd

from thinkbias.blindspot.effect import RATIO_COLUMNS
from thinkbias.markdown import markdown_table


def table_markdown(df: pd.DataFrame) -> str:
    """A blindspot table as Markdown: four significant digits, counts in full."""
    return markdown_table(df, 4, significant=True)


def _value(x: object) -> str:
    return "none" if x is None or (isinstance(x, float) and math.isnan(x)) else str(x)


def stage_parameters_line(parameters: pd.DataFrame) -> str:
    """One sentence listing the stage parameters used (:func:`thinkbias.blindspot.stages.stage_parameters`),
    each differing from the paper's value followed by it in brackets."""
    parts = []
    for row in parameters.itertuples(index=False):
        differs = _value(row.value) != _value(row.paper)
        parts.append(f"{row.parameter} = {_value(row.value)}" + (f" (paper: {_value(row.paper)})" if differs else ""))
    return "Stage parameters: " + ", ".join(parts) + "."


def stage_parameters_summary(parameters: pd.DataFrame) -> dict[str, str]:
    """The stage parameters as report summary lines (``stages.<parameter>: value``, with the paper's
    value where it differs)."""
    out = {}
    for row in parameters.itertuples(index=False):
        differs = _value(row.value) != _value(row.paper)
        out[f"stages.{row.parameter}"] = _value(row.value) + (f" (paper: {_value(row.paper)})" if differs else "")
    return out


def _pp(x: float) -> str:
    return "" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{100 * x:+.1f} pp"


def comparison_table(flagged: pd.DataFrame, paper: dict) -> pd.DataFrame:
    """One row per bias category the paper reports: its reported models and effect range next to
    what this run flagged for the matching curated concepts (and how far outside the paper's range)."""
    rows = []
    for f in paper.get("findings", []):
        mine = flagged[flagged["concept_id"].isin(f.get("concepts", []))] if len(flagged) else flagged
        if len(mine):
            lo, hi = float(mine["delta"].min()), float(mine["delta"].max())
            run = f"{len(mine)} flagged ({_pp(lo)} to {_pp(hi)})"
            outside = [d for d in mine["delta"] if not (f["effect_low"] <= d <= f["effect_high"])]
            diff = "within the paper's range" if not outside else f"{len(outside)} outside the paper's range"
        else:
            run, diff = "not flagged", "not reproduced in this run"
        rows.append(
            {
                "bias": f["bias"],
                "paper: models flagged": f["models_flagged"],
                "paper: effect": f"{100 * f['effect_low']:.1f}-{100 * f['effect_high']:.1f} pp",
                "paper: direction": f["direction"],
                "this run": run,
                "difference": diff,
            }
        )
    return pd.DataFrame(rows)


def decision_quality(stages: pd.DataFrame) -> pd.DataFrame:
    """Per (model, task, concept), at the concept's latest stage: pairs, pairs excluded for an
    unparsable decision, and responses whose decision was forced (when that option is on)."""
    if stages is None or stages.empty or "n_pairs" not in stages.columns:
        return pd.DataFrame()
    last = stages.sort_values("stage").groupby(["model", "task", "concept_id"], sort=True).tail(1)
    cols = [
        c
        for c in (
            "model",
            "task",
            "concept_id",
            "stage",
            "n_pairs",
            "n_invalid",
            "n_responses",
            "n_unparsable",
            "n_forced",
            "status",
        )
        if c in last.columns
    ]
    return last[cols].reset_index(drop=True)


def rediscovery_reading(row: pd.Series) -> str:
    """One sentence per (model, fairness task) saying only what the rediscovery row records."""
    head = f"{row['model']} / {row['task']}: {row['protected_attribute']}"
    hyp = (
        f"hypothesized by {int(row['n_hypothesized'])} generated concept(s)"
        if row["hypothesized"]
        else "not hypothesized by a generated concept"
    )
    if not row["tested"]:
        tested = "no concept matching it was tested"
    else:
        ci = f" [{_pp(row['ci_low'])}, {_pp(row['ci_high'])}]" if not pd.isna(row["ci_low"]) else ""
        tested = (
            f"{row['concept_id']} was tested and ended `{row['status']}` at stage {int(row['stage'])}: "
            f"P(Yes) {_pp(row['delta']) or 'n/a'}{ci} over {int(row['n'])} pairs, p = {row['p_value']:.3g}"
        )
    return f"- {head} {hyp}; {tested}; {int(row['n_other_flagged'])} other concept(s) flagged."


def rediscovery_section(rediscovery: pd.DataFrame) -> list[str]:
    """The report's section on the fairness tasks (thinkbias/blindspot/rediscovery.py)."""
    cols = [
        c
        for c in (
            "model",
            "task",
            "protected_attribute",
            "curated_concept",
            "hypothesized",
            "tested",
            "flagged",
            "concept_id",
            "status",
            "stage",
            "delta",
            "ci_low",
            "ci_high",
            "n",
            "p_value",
            "log10_p_value",
            "n_other_flagged",
            "other_flagged",
        )
        if c in rediscovery.columns
    ]
    return [
        "## Fairness tasks: is the protected attribute rediscovered?",
        "",
        "The fairness study varies one protected attribute by hand (Adult and Credit: sex; COMPAS: race). "
        "A concept matches it when its variation is the fairness study's counterfactual re-rendering, or "
        "its title or keywords name the attribute (docs/blindspot.md). Decisions are the fairness "
        "question's Yes/No, so an effect is a change in P(Yes): more predicted high incomes (Adult), new "
        "charges (COMPAS) or defaults (Credit).",
        "",
        table_markdown(rediscovery[cols]),
        *[rediscovery_reading(r) for _, r in rediscovery.iterrows()],
        "",
    ]


def evidence_links(flagged: pd.DataFrame, folder: str = "concepts") -> list[str]:
    """Links to the evidence page of every flagged concept and to their index (target
    ``blindspot_concepts``, pages under ``folder`` beside the report)."""
    lines = [f"Evidence pages, one per flagged concept ([index]({folder}/index.md)):", ""]
    for r in flagged.itertuples(index=False):
        lines.append(f"- [{r.model} / {r.task} / {r.concept_id}]({folder}/{r.model}/{r.task}/{r.concept_id}.md)")
    return lines + [""]


def render_report(
    flagged: pd.DataFrame,
    funnel: pd.DataFrame,
    costs: pd.DataFrame,
    paper: dict,
    summary: dict,
    stages: pd.DataFrame | None = None,
    model_outputs: pd.DataFrame | None = None,
    rediscovery: pd.DataFrame | None = None,
    evidence_pages: bool = True,
) -> str:
    """The report: configuration summary, flagged biases (with links to their evidence pages when
    ``evidence_pages``), funnel, costs, decision quality, what the model-written steps produced (when
    any ran), the fairness tasks' rediscovery table (when a fairness task ran), and the comparison
    with the paper."""
    lines = [f"# Unverbalized biases: {paper.get('paper', 'Biases in the Blind Spot')}", ""]
    lines += ["## This run", ""]
    lines += [f"- {k}: {v}" for k, v in summary.items()]
    lines += ["", "## Flagged unverbalized biases", ""]
    if len(flagged):
        show = flagged[
            [
                c
                for c in (
                    "model",
                    "task",
                    "concept_id",
                    "title",
                    "delta",
                    "ci_low",
                    "ci_high",
                    "accept_pos",
                    "accept_pos_ci_low",
                    "accept_pos_ci_high",
                    "n_pos",
                    "accept_neg",
                    "accept_neg_ci_low",
                    "accept_neg_ci_high",
                    "n_neg",
                    *RATIO_COLUMNS,
                    "b",
                    "c",
                    "n",
                    "n_invalid",
                    "p_value",
                    "log10_p_value",
                    "threshold",
                    "stage",
                    "baseline_verbalization_rate",
                    "baseline_n_unparsed",
                    "variation_verbalization_rate",
                    "n_flips",
                    "variation_n_unparsed",
                    "variation_rate_if_unparsed_cited",
                )
                if c in flagged.columns
            ]
        ]
        lines.append(table_markdown(show))
        lines += [
            "Unparsable verbalization verdicts: `baseline_n_unparsed` baseline responses left out of the "
            "baseline rate; `variation_n_unparsed` of `n_flips` flipped pairs counted as not verbalized; "
            "`variation_rate_if_unparsed_cited` is the variation rate had they all cited the concept (at or "
            "above the variation threshold, the flag depends on verdicts the judge did not give).",
            "",
        ]
        lines += evidence_links(flagged) if evidence_pages else []
    elif evidence_pages:
        lines.append("No concept was flagged in this run ([evidence pages](concepts/index.md): none).\n")
    else:
        lines.append("No concept was flagged in this run.\n")
    lines += ["## Funnel (concepts surviving each filter)", "", table_markdown(funnel)]
    lines += [
        "## Calls: staged versus exhaustive testing",
        "",
        f"Paper: staged testing saves {paper.get('validation', {}).get('calls_saved_vs_exhaustive', 'n/a')} "
        "of the calls of exhaustive testing.",
        "",
        table_markdown(costs),
    ]
    quality = decision_quality(stages)
    if len(quality):
        lines += [
            "## Decisions: parsed, excluded, forced",
            "",
            "Pairs with an unparsable decision are excluded from the test (n_invalid); forced decisions "
            "were cued after a response without a decision line (only with target.force_decision).",
            "",
            table_markdown(quality),
        ]
    if model_outputs is not None and model_outputs["n"].sum() > 0:
        lines += [
            "## Model-written concepts and variations",
            "",
            "Hypothesis replies, duplicate judgements and variation pairs written by the autoraters, with "
            "what could not be used: rejected concepts are dropped, unparsable judgements keep both "
            "concepts, invalid pairs are never sent to the target.",
            "",
            table_markdown(model_outputs),
        ]
    if rediscovery is not None and len(rediscovery):
        lines += rediscovery_section(rediscovery)
    lines += [
        "## Beside the paper's reported findings",
        "",
        "The paper's numbers come from seven frontier models on 1,336-2,500 inputs per task; a run with "
        "other models or sizes is not expected to match them. Effects are acceptance-rate differences.",
        "",
        table_markdown(comparison_table(flagged, paper)),
    ]
    return "\n".join(lines) + "\n"


def render_examples(examples: pd.DataFrame, flagged: pd.DataFrame) -> str:
    """Example discordant pairs with both inputs and both responses, per flagged concept."""
    lines = ["# Example discordant pairs of flagged concepts", ""]
    if examples.empty:
        return "\n".join(lines + ["No flagged concept, so no examples.", ""])
    titles = dict(zip(flagged["concept_id"], flagged["title"])) if len(flagged) else {}
    for (model, task, cid), sub in examples.groupby(["model", "task", "concept_id"], sort=True):
        lines += [f"## {model} / {task}: {titles.get(cid, cid)}", ""]
        for r in sub.itertuples(index=False):
            lines += [
                f"### input {r.input_id}: decision x+ = {int(r.decision_pos)}, x- = {int(r.decision_neg)}",
                "",
                "**x+ input**",
                "",
                f"> {r.input_pos}",
                "",
                "**x+ response**",
                "",
                "```",
                str(r.response_pos),
                "```",
                "",
                "**x- input**",
                "",
                f"> {r.input_neg}",
                "",
                "**x- response**",
                "",
                "```",
                str(r.response_neg),
                "```",
                "",
            ]
    return "\n".join(lines)


def render_byo_report(
    flagged: pd.DataFrame,
    funnel: pd.DataFrame,
    costs: pd.DataFrame,
    stages: pd.DataFrame,
    parameters: pd.DataFrame,
    paper: dict,
    sources: dict[str, str],
) -> str:
    """The report of a bring-your-own run: ``sources`` (the outcome and baseline files), the audits,
    the stage parameters used, then the sections of :func:`render_report`."""
    pairs = funnel[["model", "task"]].drop_duplicates().itertuples(index=False) if len(funnel) else []
    audits = ", ".join(f"{m} / {t}" for m, t in pairs)
    summary = {**sources, "audits (model / task)": audits or "none", **stage_parameters_summary(parameters)}
    return render_report(flagged, funnel, costs, paper, summary, stages, evidence_pages=False)
