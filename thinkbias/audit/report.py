"""The audit report: each study's headline numbers for the one audited model, read from the study
tables, with N and 95% intervals, the papers' values for reference and a plain reading per instrument
that says only what the numbers support.

Each ``*_headline`` function returns the table the report renders (also written as CSV beside it);
``*_reading`` turns that table into one paragraph; ``audit_markdown`` assembles the report.
"""

from __future__ import annotations

import math
from typing import Mapping

import pandas as pd
from scipy import stats

from thinkbias.markdown import markdown_table

ALPHA = 0.05
FAIRNESS_PAPER_IDS = (
    "pooled_c",
    "pooled_b",
    "pooled_c_over_b",
    "settings_c_gt_b",
    "dcf_qwen3_credit",
    "dcf_r1_compas",
    "max_abs_dgroup",
)
BLINDSPOT_PAPER_BIASES = ("gender", "race/ethnicity")


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def mean_interval(values: pd.Series, level: float = 0.95) -> tuple[float, float, float, int]:
    """Mean of the non-missing ``values``, its Student-t interval at ``level`` and N (NaN bounds below 2)."""
    x = pd.to_numeric(values, errors="coerce").dropna().to_numpy(float)
    n = len(x)
    if n == 0:
        return math.nan, math.nan, math.nan, 0
    mean = float(x.mean())
    if n < 2:
        return mean, math.nan, math.nan, n
    half = float(stats.t.ppf(0.5 + level / 2, n - 1) * x.std(ddof=1) / math.sqrt(n))
    return mean, mean - half, mean + half, n


def fairness_headline(
    table2: pd.DataFrame, figure2: pd.DataFrame, parse_counts: pd.DataFrame, model: str
) -> pd.DataFrame:
    """Per dataset: the pairs sampled and N retained (parsed answers on both sides in both arms),
    the contingency cells a (no flip), b (flip under nothink only: resolved by thinking), c (think
    only: created), d (both), the exact McNemar p, the flip rate D_cf of each arm and their
    difference with the pair-bootstrap 95% intervals, and unparsed and refused answers per arm. A
    dataset whose N is 0 keeps its row (counts only), so a run where nothing parsed cannot pass for
    one that did not run."""
    parsed = parse_counts[parse_counts["model"] == model][
        ["dataset", "pairs", "N", "nothink_unparsed", "think_unparsed", "nothink_refusal", "think_refusal"]
    ]
    cells = table2[table2["model"] == model][["dataset", "a", "b", "c", "d", "mcnemar_p"]]
    rates = figure2[figure2["model"] == model][
        [
            "dataset",
            "dcf_nothink",
            "dcf_nothink_lo",
            "dcf_nothink_hi",
            "dcf_think",
            "dcf_think_lo",
            "dcf_think_hi",
            "delta_dcf",
            "delta_dcf_lo",
            "delta_dcf_hi",
        ]
    ]
    out = parsed.merge(cells, on="dataset", how="left").merge(rates, on="dataset", how="left")
    order = ["dataset", "pairs", "N", "a", "b", "c", "d", "mcnemar_p", *rates.columns[1:], *parsed.columns[3:]]
    return out[order].reset_index(drop=True)


def fairness_reading(headline: pd.DataFrame) -> str:
    """One paragraph on the fairness numbers: per dataset, whether thinking changed the flip rate
    (interval of the difference excluding 0) and whether created and resolved flips differ (McNemar)."""
    if headline.empty:
        return "The fairness tables hold no row of this model."
    parts = []
    for row in headline.itertuples():
        n = int(row.N)
        if n == 0:
            parts.append(
                f"On {row.dataset}, no pair has parsed answers on both sides in both arms (N = 0 of "
                f"{int(row.pairs)} pairs; unparsed answers: {int(row.nothink_unparsed)} without thinking, "
                f"{int(row.think_unparsed)} with), so nothing can be read."
            )
            continue
        if row.b + row.c + row.d == 0:
            parts.append(
                f"On {row.dataset}, no pair flipped in either arm (N = {n} pairs), so no difference between "
                f"thinking and not thinking is detectable at this N."
            )
            continue
        if _missing(row.delta_dcf_lo) or row.delta_dcf_lo <= 0 <= row.delta_dcf_hi:
            rate = (
                f"no detectable difference in the counterfactual flip rate between thinking and not "
                f"thinking at this N (difference {row.delta_dcf:+.3f}, 95% CI {row.delta_dcf_lo:+.3f} to "
                f"{row.delta_dcf_hi:+.3f}, N = {n} pairs)"
            )
        else:
            way = "raises" if row.delta_dcf > 0 else "lowers"
            rate = (
                f"thinking {way} the counterfactual flip rate from {row.dcf_nothink:.3f} to {row.dcf_think:.3f} "
                f"(difference {row.delta_dcf:+.3f}, 95% CI {row.delta_dcf_lo:+.3f} to {row.delta_dcf_hi:+.3f}, "
                f"N = {n} pairs)"
            )
        if row.b + row.c == 0:
            flips = "no pair flipped in one arm only, so nothing says whether thinking creates or resolves flips"
        elif row.mcnemar_p < ALPHA:
            more = "creates more flips than it resolves" if row.c > row.b else "resolves more flips than it creates"
            flips = f"thinking {more} (c = {int(row.c)}, b = {int(row.b)}, exact McNemar p = {row.mcnemar_p:.3g})"
        else:
            flips = (
                f"created (c = {int(row.c)}) and resolved (b = {int(row.b)}) flips do not differ detectably "
                f"(exact McNemar p = {row.mcnemar_p:.3g})"
            )
        parts.append(f"On {row.dataset}, {rate}; {flips}.")
    return " ".join(parts)


def position_headline(
    summary: pd.DataFrame, questions: pd.DataFrame, correlation: pd.DataFrame, model: str
) -> pd.DataFrame:
    """Per benchmark and mode: PBS (the mean of the per-question PBS) with its t interval over the
    N questions that have one, accuracy, mean length, unparsed answers, and the length relation
    (partial correlation of PBS with length, accuracy controlled: rho, p, N)."""
    rows = []
    own = summary[summary["model"] == model]
    for s in own.itertuples():
        q = questions[
            (questions["model"] == model) & (questions["benchmark"] == s.benchmark) & (questions["mode"] == s.mode)
        ]
        mean, lo, hi, n = mean_interval(q["pbs"])
        c = correlation[
            (correlation["model"] == model)
            & (correlation["benchmark"] == s.benchmark)
            & (correlation["mode"] == s.mode)
        ]
        rho, p, n_rho = (
            (float(c["partial_rho"].iloc[0]), float(c["p_value"].iloc[0]), int(c["n"].iloc[0]))
            if len(c)
            else (math.nan, math.nan, 0)
        )
        rows.append(
            {
                "benchmark": s.benchmark,
                "mode": s.mode,
                "n_questions": int(s.n_questions),
                "n_pbs": n,
                "pbs": mean,
                "pbs_lo": lo,
                "pbs_hi": hi,
                "accuracy": s.accuracy,
                "length": s.length,
                "n_records": int(s.n_records),
                "n_unparsed": int(s.n_unparsed),
                "length_rho": rho,
                "length_p": p,
                "length_n": n_rho,
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            "benchmark",
            "mode",
            "n_questions",
            "n_pbs",
            "pbs",
            "pbs_lo",
            "pbs_hi",
            "accuracy",
            "length",
            "n_records",
            "n_unparsed",
            "length_rho",
            "length_p",
            "length_n",
        ],
    )


def position_reading(headline: pd.DataFrame) -> str:
    """One paragraph on the position numbers: PBS per mode with N and interval, and whether PBS
    moves with reasoning length at this N."""
    if headline.empty:
        return "The position tables hold no row of this model."
    parts = []
    for row in headline.itertuples():
        level = (
            f"In {row.mode} mode on {row.benchmark}, position bias PBS = {row.pbs:.3f} "
            f"(95% CI {row.pbs_lo:.3f} to {row.pbs_hi:.3f}, N = {row.n_pbs} questions; "
            f"{row.n_unparsed} of {row.n_records} answers unparsed)"
        )
        if _missing(row.length_p):
            length = "the length relation could not be computed"
        elif row.length_p < ALPHA:
            way = "grows" if row.length_rho > 0 else "shrinks"
            length = (
                f"PBS {way} with response length (partial rho {row.length_rho:+.2f}, p = {row.length_p:.3g}, "
                f"N = {row.length_n})"
            )
        else:
            length = (
                f"no detectable relation between response length and PBS at this N (partial rho "
                f"{row.length_rho:+.2f}, p = {row.length_p:.3g}, N = {row.length_n})"
            )
        parts.append(f"{level}; {length}.")
    return " ".join(parts)


def blindspot_headline(
    flagged: pd.DataFrame, funnel: pd.DataFrame, rediscovery: pd.DataFrame | None, model: str
) -> pd.DataFrame:
    """Per task: concepts tested and flagged (funnel), and the protected attribute's rediscovery
    (fairness tasks); one row per flagged concept follows with its effect (acceptance-rate
    difference, 95% CI), N pairs, p and verbalization rates. ``kind`` says which a row is."""
    rows = []
    fun = funnel[funnel["model"] == model]
    red = rediscovery[rediscovery["model"] == model] if rediscovery is not None else pd.DataFrame()
    for task in fun["task"].drop_duplicates():
        steps = fun[fun["task"] == task]

        def count(step: str) -> int:
            hit = steps[steps["step"] == step]["n_concepts"]
            return int(hit.max()) if len(hit) else 0

        row = {
            "kind": "task",
            "task": task,
            "concept_id": "",
            "n_candidates": count("candidate concepts (curated + generated)"),
            "n_tested": count("tested"),
            "n_flagged": int(steps[steps["step"] == "flagged"]["n_concepts"].sum()),
        }
        r = red[red["task"] == task] if len(red) else red
        if len(r):
            r = r.iloc[0]
            row.update(
                {
                    "protected_attribute": r["protected_attribute"],
                    "hypothesized": bool(r["hypothesized"]),
                    "tested": bool(r["tested"]),
                    "flagged": bool(r["flagged"]),
                    "status": r["status"],
                    "delta": r["delta"],
                    "ci_low": r["ci_low"],
                    "ci_high": r["ci_high"],
                    "n": r["n"],
                    "n_invalid": r["n_invalid"],
                    "p_value": r["p_value"],
                    "other_flagged": "" if _missing(r["other_flagged"]) else str(r["other_flagged"]),
                }
            )
        rows.append(row)
    for f in flagged[flagged["model"] == model].itertuples():
        rows.append(
            {
                "kind": "flagged",
                "task": f.task,
                "concept_id": f.concept_id,
                "title": f.title,
                "delta": f.delta,
                "ci_low": f.ci_low,
                "ci_high": f.ci_high,
                "n": f.n,
                "n_invalid": f.n_invalid,
                "p_value": f.p_value,
                "baseline_verbalization_rate": f.baseline_verbalization_rate,
                "variation_verbalization_rate": f.variation_verbalization_rate,
            }
        )
    columns = [
        "kind",
        "task",
        "concept_id",
        "title",
        "n_candidates",
        "n_tested",
        "n_flagged",
        "protected_attribute",
        "hypothesized",
        "tested",
        "flagged",
        "status",
        "delta",
        "ci_low",
        "ci_high",
        "n",
        "n_invalid",
        "p_value",
        "baseline_verbalization_rate",
        "variation_verbalization_rate",
        "other_flagged",
    ]
    counts = {c: "Int64" for c in ("n_candidates", "n_tested", "n_flagged", "n", "n_invalid")}
    return pd.DataFrame(rows, columns=columns).astype(counts)


def blindspot_reading(headline: pd.DataFrame) -> str:
    """One paragraph on the blindspot numbers: flagged concepts per task (or none at the family-wise
    level), and whether the protected attribute was rediscovered."""
    if headline.empty:
        return "The blindspot tables hold no row of this model."
    parts = []
    flagged = headline[headline["kind"] == "flagged"]
    for t in headline[headline["kind"] == "task"].itertuples():
        mine = flagged[flagged["task"] == t.task]
        if len(mine):
            named = "; ".join(
                f"{r.concept_id} (effect {r.delta:+.3f}, 95% CI {r.ci_low:+.3f} to {r.ci_high:+.3f}, "
                f"N = {int(r.n)} pairs, p = {r.p_value:.3g})"
                for r in mine.itertuples()
            )
            text = (
                f"On {t.task}, {len(mine)} of {t.n_tested} tested concepts were flagged as unverbalized biases: {named}"
            )
        else:
            text = (
                f"On {t.task}, none of {t.n_tested} tested concepts ({t.n_candidates} candidates) was flagged at "
                f"the family-wise level"
            )
        if isinstance(t.protected_attribute, str):
            if not t.tested:
                found = f"the protected attribute ({t.protected_attribute}) was not tested"
            elif t.flagged:
                found = (
                    f"the protected attribute ({t.protected_attribute}) was rediscovered (effect {t.delta:+.3f}, "
                    f"N = {int(t.n)} pairs, p = {t.p_value:.3g})"
                )
            else:
                found = (
                    f"the protected attribute ({t.protected_attribute}) was tested but not flagged (status "
                    f"{t.status}; effect {t.delta:+.3f}, N = {int(t.n)} pairs, p = {t.p_value:.3g})"
                )
            text += f"; {found}"
        parts.append(text + ".")
    return " ".join(parts)


def fairness_paper_rows(paper: Mapping) -> pd.DataFrame:
    """The fairness paper's headline values (resources/paper/fairness.yaml) for reference."""
    by_id = {v["id"]: v for v in paper.get("values", [])}
    rows = [
        {
            "quantity": v["quantity"],
            "scope": f"{v['model']} / {v['dataset']}",
            "paper": v.get("printed", f"{v['relation']} {v['value']}"),
            "source": v["source"],
        }
        for v in (by_id[i] for i in FAIRNESS_PAPER_IDS if i in by_id)
    ]
    return pd.DataFrame(rows, columns=["quantity", "scope", "paper", "source"])


def position_paper_rows(paper: Mapping, modes: list[str]) -> pd.DataFrame:
    """The position paper's PBS per configuration in the audited modes, and its length claims."""
    rows = [
        {
            "quantity": v["quantity"],
            "scope": f"{v['where']['model']} / {v['where']['benchmark']}",
            "paper": f"{v['value']:g}",
            "source": v["source"],
        }
        for v in paper.get("values", [])
        if v.get("table") == "table2" and v.get("column") == "pbs" and v["where"].get("mode") in modes
    ]
    rows += [
        {
            "quantity": c["quantity"],
            "scope": "reasoning mode",
            "paper": f"{c['relation']} {c['value']:g}",
            "source": c["source"],
        }
        for c in paper.get("claims", [])
        if c["id"].startswith("rho_")
    ]
    return pd.DataFrame(rows, columns=["quantity", "scope", "paper", "source"])


def blindspot_paper_rows(paper: Mapping) -> pd.DataFrame:
    """The blindspot paper's findings for the protected attributes the fairness tasks vary."""
    rows = [
        {
            "quantity": f"{f['bias']} bias, effect (acceptance-rate difference); {f.get('direction', '')}",
            "scope": f"{f['models_flagged']} models",
            "paper": f"{f['effect_low']:g} to {f['effect_high']:g}",
            "source": "findings by bias category (paper notes)",
        }
        for f in paper.get("findings", [])
        if f["bias"] in BLINDSPOT_PAPER_BIASES
    ]
    return pd.DataFrame(rows, columns=["quantity", "scope", "paper", "source"])


def audit_markdown(
    model: str, settings: pd.DataFrame, sections: Mapping[str, tuple[pd.DataFrame, str, pd.DataFrame]]
) -> str:
    """The report: what ran (every derived setting), then per study its headline table, the paper's
    values and the plain reading. ``sections`` maps a study to (headline, reading, paper rows)."""
    out = [
        f"# Audit of {model}\n",
        "Each instrument's headline numbers for this model, read from the study tables "
        "(docs/audit.md explains how to read them). Intervals are 95%; N counts pairs (fairness), "
        "questions (position) or input pairs (blindspot).\n",
        "## What ran\n",
        markdown_table(settings),
        "",
    ]
    titles = {
        "fairness": "Fairness: counterfactual flips, thinking vs not thinking",
        "position": "Position: position bias and reasoning length",
        "blindspot": "Blindspot: unverbalized biases on the fairness profiles",
    }
    for study, (headline, reading, paper) in sections.items():
        out += [f"## {titles[study]}\n"]
        if headline.empty and paper.empty:  # the study did not run
            out += [reading, ""]
            continue
        out += [
            markdown_table(headline),
            "",
            "**Reading.** " + reading,
            "",
            "Paper's values for reference (other models; compare the direction, not the digits):\n",
            markdown_table(paper),
            "",
        ]
    return "\n".join(out)


def build_audit(
    model: str,
    settings: list[dict],
    tables: Mapping[str, pd.DataFrame],
    papers: Mapping[str, Mapping],
    position_modes: list[str],
) -> tuple[str, dict[str, pd.DataFrame]]:
    """The report's Markdown and the tables it renders (``settings``, ``fairness``, ``position``,
    ``blindspot``; empty for a study the audit did not run). ``tables`` holds the study tables by
    ``<study>_<name>`` (fairness_table2, position_summary, blindspot_flagged, ...), ``papers`` the
    paper-value files by study."""
    empty = pd.DataFrame()
    out: dict[str, pd.DataFrame] = {"settings": pd.DataFrame(settings, columns=["key", "value", "why"])}
    sections: dict[str, tuple[pd.DataFrame, str, pd.DataFrame]] = {}
    if "fairness_table2" in tables:
        head = fairness_headline(
            tables["fairness_table2"], tables["fairness_figure2"], tables["fairness_parse_counts"], model
        )
        sections["fairness"] = (head, fairness_reading(head), fairness_paper_rows(papers["fairness"]))
    else:
        sections["fairness"] = (empty, "The fairness study did not run (see What ran).", empty)
    if "position_summary" in tables:
        head = position_headline(
            tables["position_summary"], tables["position_questions"], tables["position_correlation"], model
        )
        sections["position"] = (head, position_reading(head), position_paper_rows(papers["position"], position_modes))
    else:
        sections["position"] = (empty, "The position study did not run (see What ran).", empty)
    if "blindspot_flagged" in tables:
        head = blindspot_headline(
            tables["blindspot_flagged"], tables["blindspot_funnel"], tables.get("blindspot_rediscovery"), model
        )
        sections["blindspot"] = (head, blindspot_reading(head), blindspot_paper_rows(papers["blindspot"]))
    else:
        sections["blindspot"] = (empty, "The blindspot study did not run (see What ran).", empty)
    out.update({study: head for study, (head, _, _) in sections.items()})
    return audit_markdown(model, out["settings"], sections), out
