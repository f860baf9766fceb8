"""One evidence page per flagged concept: the concept and its two sides, its path through the stages,
the acceptance rate of each side with its Wilson interval and N, the effect size, both verbalization
rates with their N, and example pairs whose decision flipped with the judge's verdicts.

Pages are returned as Markdown text keyed by their path relative to the pages' folder
(``<model>/<task>/<concept_id>.md``); the script writes them and each page's figure
(``<model>/<task>/<concept_id>.png``, :func:`thinkbias.plots.blindspot.acceptance_figure`).
"""

from __future__ import annotations

import math

import pandas as pd

from thinkbias.blindspot.report import table_markdown

STAGE_PATH_COLUMNS = ["stage", "n_inputs", "b", "c", "n", "p_value", "threshold", "status"]
EXAMPLE_COLUMNS = [
    "input_id",
    "decision_pos",
    "decision_neg",
    "verbalized_pos",
    "verbalized_neg",
    "response_pos",
    "response_neg",
]


def page_name(model: str, task: str, concept_id: str, suffix: str = ".md") -> str:
    """Path of a concept's page (or figure, with ``suffix``) relative to the pages' folder."""
    return f"{model}/{task}/{concept_id}{suffix}"


def _missing(x: object) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _rate(x: float, n: float) -> str:
    if _missing(x) or _missing(n):
        return "n/a (N = 0)"
    return f"{x:.3f} of N = {int(n)}"


def _number(x: float) -> str:
    return "n/a" if _missing(x) else f"{x:.3g}"


def _interval(lo: float, hi: float) -> str:
    if _missing(lo) or _missing(hi):
        return "n/a"
    return f"[{lo:.3f}, {hi:.3f}]"


def stage_path(stages: pd.DataFrame, model: str, task: str, concept_id: str) -> pd.DataFrame:
    """The concept's rows of the stage table, in stage order: b, c, p, the threshold p was compared
    with, and the decision taken at that stage."""
    sub = stages[(stages["model"] == model) & (stages["task"] == task) & (stages["concept_id"] == concept_id)]
    cols = [c for c in STAGE_PATH_COLUMNS if c in sub.columns]
    return sub.sort_values("stage")[cols].reset_index(drop=True)


def _verdict(value: object) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "not judged"
    return "cites the concept" if bool(value) else "does not cite it"


def flipped_examples(
    responses: pd.DataFrame, verdicts: pd.DataFrame, concept_id: str, per_concept: int = 3
) -> pd.DataFrame:
    """Up to ``per_concept`` pairs of the concept whose two decisions differ (first by input id), with
    both decisions, both responses and the verbalization verdict of each side.

    ``responses``: ``concept_id, input_id, side ("pos"/"neg"), decision, text`` of one audit;
    ``verdicts``: ``concept_id, input_id, side, verbalized`` (None where the judge's reply did not parse).
    """
    r = responses[responses["concept_id"] == concept_id].drop_duplicates(["input_id", "side"])
    if r.empty:
        return pd.DataFrame(columns=EXAMPLE_COLUMNS)
    wide = r.pivot(index="input_id", columns="side", values=["decision", "text"])
    wide.columns = [f"{a}_{b}" for a, b in wide.columns]
    for col in ("decision_pos", "decision_neg", "text_pos", "text_neg"):
        if col not in wide.columns:
            wide[col] = None
    both = wide["decision_pos"].notna() & wide["decision_neg"].notna()
    flips = wide[both & (wide["decision_pos"] != wide["decision_neg"])].sort_index().head(per_concept)
    v = verdicts[verdicts["concept_id"] == concept_id].drop_duplicates(["input_id", "side"])
    by_side = {side: v[v["side"] == side].set_index("input_id")["verbalized"] for side in ("pos", "neg")}
    out = pd.DataFrame(
        {
            "input_id": flips.index,
            "decision_pos": flips["decision_pos"].to_numpy(),
            "decision_neg": flips["decision_neg"].to_numpy(),
            "verbalized_pos": [_verdict(by_side["pos"].get(i)) for i in flips.index],
            "verbalized_neg": [_verdict(by_side["neg"].get(i)) for i in flips.index],
            "response_pos": flips["text_pos"].to_numpy(),
            "response_neg": flips["text_neg"].to_numpy(),
        }
    )
    return out[EXAMPLE_COLUMNS]


def _decision(x: object) -> str:
    return {1: "accept", 0: "reject"}.get(int(x), str(x)) if x is not None else "none"


def _quote(text: object, limit: int = 600) -> list[str]:
    s = str(text or "").strip()
    s = s if len(s) <= limit else s[:limit] + " ..."
    return ["> " + line for line in (s.splitlines() or [""])]


def render_concept_page(flag: pd.Series, concept: pd.Series | None, path: pd.DataFrame, examples: pd.DataFrame) -> str:
    """The evidence page of one flagged concept (a row of the flagged table), its concept row (title
    and the two sides of its variation), its stage path and its flipped example pairs."""
    model, task, cid = flag["model"], flag["task"], flag["concept_id"]
    title = flag.get("title") if isinstance(flag.get("title"), str) else cid
    pos = concept.get("addition_action") if concept is not None else None
    neg = concept.get("removal_action") if concept is not None else None
    lines = [f"# {title}", "", f"`{cid}`, model `{model}`, task `{task}`. [All flagged concepts](../../index.md)", ""]
    lines += ["## The concept and its two sides", ""]
    lines += [f"- x+ (positive side): {pos or 'n/a'}", f"- x- (negative side): {neg or 'n/a'}"]
    if concept is not None and isinstance(concept.get("verbalization_check_guide"), str):
        lines.append(f"- what counts as citing it: {concept['verbalization_check_guide']}")
    lines += ["", "## Stage path", ""]
    lines += [
        "McNemar's test per stage on the paired decisions: b = (x+ accepted, x- rejected), c = the reverse, "
        "n = pairs with both decisions parsed; the decision compares p with the stage's threshold.",
        "",
        table_markdown(path) if len(path) else "No stage rows.\n",
    ]
    lines += ["## Acceptance rate per side", ""]
    lines += [
        "| side | acceptance rate | 95% Wilson interval | N |",
        "|---|---|---|---|",
        f"| x+ | {flag['accept_pos']:.3f} | {_interval(flag['accept_pos_ci_low'], flag['accept_pos_ci_high'])} "
        f"| {int(flag['n_pos'])} |",
        f"| x- | {flag['accept_neg']:.3f} | {_interval(flag['accept_neg_ci_low'], flag['accept_neg_ci_high'])} "
        f"| {int(flag['n_neg'])} |",
        "",
        f"Effect size: delta = P(accept | x+) - P(accept | x-) = {flag['delta']:+.3f}, 95% paired interval "
        f"{_interval(flag['ci_low'], flag['ci_high'])} over N = {int(flag['n'])} complete pairs "
        f"(b = {int(flag['b'])}, c = {int(flag['c'])}, {int(flag['n_invalid'])} pairs with an unparsable "
        f"decision excluded); p = {flag['p_value']:.4g} against the threshold {flag['threshold']:.4g} "
        f"at stage {int(flag['stage'])}.",
    ]
    if "odds_ratio" in flag.index:
        lines.append(
            f"Odds ratio {_number(flag['odds_ratio'])} "
            f"{_interval(flag['odds_ratio_ci_low'], flag['odds_ratio_ci_high'])}, "
            f"relative risk {_number(flag['relative_risk'])} "
            f"{_interval(flag['relative_risk_ci_low'], flag['relative_risk_ci_high'])} (x+ against x-)."
        )
    lines += ["", f"![Acceptance rate per side]({cid}.png)", ""]
    lines += ["## Verbalization", ""]
    lines += [
        "- baseline responses citing the concept: "
        f"{_rate(flag['baseline_verbalization_rate'], flag['baseline_n_judged'])} judged responses",
        f"- flipped pairs where either side cites it: "
        f"{_rate(flag['variation_verbalization_rate'], flag['n_flips'])} flipped pairs",
        "",
    ]
    lines += ["## Example pairs whose decision flipped", ""]
    if examples.empty:
        lines += ["No flipped pair among the stored responses.", ""]
    for i, ex in enumerate(examples.itertuples(index=False), 1):
        lines += [
            f"### {i}. `{ex.input_id}`: x+ {_decision(ex.decision_pos)}, x- {_decision(ex.decision_neg)}",
            "",
            f"x+ response ({ex.verbalized_pos}):",
            "",
            *_quote(ex.response_pos),
            "",
            f"x- response ({ex.verbalized_neg}):",
            "",
            *_quote(ex.response_neg),
            "",
        ]
    return "\n".join(lines)


def render_index(flagged: pd.DataFrame) -> str:
    """The index of the evidence pages: one line per flagged concept, or a sentence saying none was."""
    lines = ["# Flagged concepts: evidence pages", ""]
    if flagged.empty:
        return "\n".join(lines + ["No concept was flagged in this run, so there are no pages.", ""])
    lines += ["| model | task | concept | delta | N pairs | page |", "|---|---|---|---|---|---|"]
    for r in flagged.itertuples(index=False):
        lines.append(
            f"| {r.model} | {r.task} | {r.title} | {r.delta:+.3f} | {int(r.n)} | "
            f"[{r.concept_id}]({page_name(r.model, r.task, r.concept_id)}) |"
        )
    return "\n".join(lines + [""])


def concept_pages(
    flagged: pd.DataFrame,
    stages: pd.DataFrame,
    concepts: pd.DataFrame,
    responses: pd.DataFrame,
    verdicts: pd.DataFrame,
    per_concept: int = 3,
) -> dict[str, str]:
    """Every page: ``index.md`` and one page per flagged concept, keyed by path relative to the folder.

    ``concepts`` carries a ``task`` column beside the concept table's; ``responses`` and ``verdicts``
    carry ``model`` and ``task`` columns beside the stage files' (every stage of every audit).
    """
    pages = {"index.md": render_index(flagged)}
    for _, flag in flagged.iterrows():
        model, task, cid = flag["model"], flag["task"], flag["concept_id"]
        rows = concepts[(concepts["task"] == task) & (concepts["concept_id"] == cid)]
        audit = (responses["model"] == model) & (responses["task"] == task)
        judged = (verdicts["model"] == model) & (verdicts["task"] == task)
        examples = flipped_examples(responses[audit], verdicts[judged], cid, per_concept)
        pages[page_name(model, task, cid)] = render_concept_page(
            flag, rows.iloc[0] if len(rows) else None, stage_path(stages, model, task, cid), examples
        )
    return pages
