"""The Markdown report of a run: every reproduced number beside the paper's, with the difference.

Paper values come from resources/paper/fairness.yaml. A value's ``measure`` names how the run
computes it (see :data:`MEASURES`); its model/dataset scope uses registry ids, ``pooled`` meaning
over every setting of the run. Verdicts:
    match / differs   - the run has that model (and, for pooled values, exactly the paper's models);
                        "=" values compare |difference| to the tolerance, bounds check the relation;
    different model   - the run's model is not the paper's (the run's model on the same dataset is shown);
    not run           - the dataset (or, for Appendix D values, the model) is not part of the run;
    not finite        - the run's number is infinite (never a match).

Each value is shown as the paper prints it (``printed``: "89%", "≈ 5.7×"; see
:mod:`thinkbias.fairness.paper_values`) and the run's number in the same unit with one digit more.
The ``appendix_d`` block holds what the paper says of its Appendix D replication (gemma-2-27B,
Llama-3.1-8B): a run of those models is compared with it, model by model, instead of with the main
study's per-model values; ``comparable`` values match within ``factor`` of the paper's number.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from thinkbias.fairness.paper_values import format_difference, format_like, parse_printed
from thinkbias.markdown import format_cell, markdown_table

Tables = dict[str, pd.DataFrame]


def _row(t: pd.DataFrame, model: str, dataset: str) -> pd.Series | None:
    r = t[(t["model"] == model) & (t["dataset"] == dataset)]
    return r.iloc[0] if len(r) else None


def _settings(tables: Tables) -> pd.DataFrame:
    t = tables["table2"]
    return t[t["model"] != "pooled"]


def _count(tables: Tables, what: str, model: str = "pooled") -> float:
    s = _settings(tables)
    if model != "pooled":
        s = s[s["model"] == model]
    f2 = tables["figure2"]
    if what == "c_gt_b":
        return float((s["c"] > s["b"]).sum())
    if what == "delta_dcf_pos":
        return float((f2["delta_dcf"] > 0).sum())
    if what == "abs_delta_dgroup_le_0.015":
        return float((f2["delta_dgroup"].abs() <= 0.015).sum())
    if what == "abs_delta_c_le_0.56":
        return float((tables["table5"]["delta_c_pct"].abs() <= 0.56).sum())
    if what == "probe_passes_K10":
        return float(2 * 10 * tables["parse_counts"]["pairs"].sum())
    raise KeyError(what)


def measure(tables: Tables, spec: str, model: str, dataset: str) -> float:
    """Compute one measure (``table.column``, ``table4.<from>.<column>``, ``count.<what>``,
    ``max.<column>``, ``maxrow.<from>.<column>``, ``ratio.c_over_b``) for a model/dataset scope;
    ``count.c_gt_b`` and ``ratio.c_over_b`` of a model are over that model's settings."""
    kind, _, rest = spec.partition(".")
    if kind == "count":
        return _count(tables, rest, model)
    if kind == "ratio" and rest == "c_over_b":
        s = _settings(tables)
        s = s if model == "pooled" else s[s["model"] == model]
        b = float(s["b"].sum())
        return float(s["c"].sum()) / b if b else (math.inf if float(s["c"].sum()) else math.nan)
    if kind == "max":
        if rest == "abs_delta_dgroup":
            return float(tables["figure2"]["delta_dgroup"].abs().max())
        return float(_settings(tables)[rest].max())
    if kind == "maxrow":
        state, col = rest.split(".")
        t = tables["table4"]
        t = t[(t["model"] == model) & (t["from"] == state)]
        return float(t[col].max()) if len(t) else math.nan
    if kind == "table4":
        state, col = rest.split(".")
        t = tables["table4"]
        r = t[(t["model"] == model) & (t["dataset"] == dataset) & (t["from"] == state)]
        return float(r[col].iloc[0]) if len(r) else math.nan
    r = _row(tables[kind], model, dataset)
    return float(r[rest]) if r is not None else math.nan


def _paper_text(v: dict) -> str:
    """A paper value as the paper prints it (``printed``), with its relation when the text lacks it;
    integers without decimals for values stored without their printed text."""
    rel = v.get("relation", "=")
    if "printed" in v:
        text = str(v["printed"])
        return text if rel in ("=", "comparable") or text[:1] in "<>≤≥" else f"{rel} {text}"
    value = v["value"]
    number = str(int(value)) if float(value).is_integer() else format_cell(float(value), 3)
    return number if rel == "=" else f"{rel} {number}"


def _verdict(value: float, v: dict) -> str:
    """match / differs / missing / not finite for a value the run has."""
    rel = v.get("relation", "=")
    if math.isnan(value):
        return "missing"
    if math.isinf(value):  # e.g. an underflowed log10 p: no bound can be checked on it
        return "not finite"
    if rel == "=":
        return "match" if abs(value - v["value"]) <= float(v.get("tolerance", 0)) else "differs"
    if rel == "comparable":
        factor = float(v.get("factor", 2.0))
        return "match" if v["value"] / factor <= value <= v["value"] * factor else "differs"
    if rel == "<=":
        return "match" if value <= v["value"] else "differs"
    return "match" if value >= v["value"] else "differs"


def _row_out(v: dict, shown_model: str, value: float, verdict: str, part: str) -> dict:
    rel = v.get("relation", "=")
    diff = value - v["value"] if rel in ("=", "comparable") and not math.isnan(value) else math.nan
    if "printed" in v:
        printed = parse_printed(v["printed"])
        shown, shown_diff = format_like(value, printed), format_difference(diff, printed)
    else:
        shown = format_cell(value, 3, missing="—")
        shown_diff = format_cell(diff, 3, missing="—")
    return {
        "id": v["id"],
        "quantity": v["quantity"],
        "model": shown_model,
        "dataset": v["dataset"],
        "paper": _paper_text(v),
        "reproduced": value,
        "difference": diff,
        "verdict": verdict,
        "source": v["source"] if part == "main" else f"Appendix D: {v['source']}",
        "reproduced_shown": shown or "—",
        "difference_shown": shown_diff or "—",
    }


def _appendix_d_models(paper: dict, run_models: list[str]) -> list[str]:
    return [m for m in run_models if m in paper.get("appendix_d", {}).get("models", {})]


def compare(tables: Tables, paper: dict, run_models: list[str], run_datasets: list[str]) -> pd.DataFrame:
    """One row per paper value: scope, paper value, reproduced value, difference, verdict; also the
    reproduced value and the difference as text in the paper's unit and precision
    (``reproduced_shown``, ``difference_shown``).

    The main study's values are compared when the run has one of its models, or no Appendix D model
    (then the first run model stands in, verdict *different model*); the Appendix D values when the
    run has an Appendix D model, each against that model's own settings.
    """
    paper_models = list(paper["models"])
    appendix_models = _appendix_d_models(paper, run_models)
    main_models = [m for m in run_models if m in paper_models]
    stand_in = sorted(run_models)[0] if run_models else ""
    same_models = set(run_models) == set(paper_models) and set(run_datasets) == set(paper["datasets"])
    rows = []
    if main_models or not appendix_models:
        for v in paper["values"]:
            model, dataset = v["model"], v["dataset"]
            shown_model = model
            if model == "pooled":
                verdict_basis = "ok" if same_models else "different model"
                shown_model = "pooled" if same_models else f"pooled ({', '.join(sorted(run_models))})"
                value = measure(tables, v["measure"], model, dataset)
            elif dataset != "pooled" and dataset not in run_datasets:
                verdict_basis, value = "not run", math.nan
            elif model in run_models:
                verdict_basis = "ok"
                value = measure(tables, v["measure"], model, dataset)
            else:
                verdict_basis = "different model"
                shown_model = f"{stand_in} (for {paper['models'].get(model, model)})"
                value = measure(tables, v["measure"], stand_in, dataset)
            verdict = _verdict(value, v) if verdict_basis == "ok" else verdict_basis
            rows.append(_row_out(v, shown_model, value, verdict, "main"))
    if appendix_models:
        names = paper["appendix_d"]["models"]
        for v in paper["appendix_d"]["values"]:
            model = v["model"]
            shown_model = f"{model} ({names.get(model, model)})"
            if model not in run_models:
                rows.append(_row_out(v, shown_model, math.nan, "not run", "appendix_d"))
                continue
            value = measure(tables, v["measure"], model, v["dataset"])
            rows.append(_row_out(v, shown_model, value, _verdict(value, v), "appendix_d"))
    return pd.DataFrame(rows)


def comparison_view(cmp_table: pd.DataFrame) -> pd.DataFrame:
    """The comparison as the report shows it: reproduced value and difference as text in the paper's
    unit and precision."""
    if cmp_table.empty:
        return cmp_table
    view = cmp_table.drop(columns=["reproduced", "difference"]).rename(
        columns={"reproduced_shown": "reproduced", "difference_shown": "difference"}
    )
    return view[["id", "quantity", "model", "dataset", "paper", "reproduced", "difference", "verdict", "source"]]


def render_report(
    run: str,
    tables: Tables,
    paper: dict,
    run_models: list[str],
    run_datasets: list[str],
    cost: pd.DataFrame,
    wall: pd.DataFrame | None = None,
) -> str:
    """The whole Markdown report of a run."""
    cmp_table = compare(tables, paper, run_models, run_datasets)
    t2 = tables["table2"]
    lines = [
        f"# Fairness study: run `{run}`",
        "",
        f"Reproduction of {paper['paper']}. Models: {', '.join(sorted(run_models))}; "
        f"datasets: {', '.join(run_datasets)}.",
        "",
    ]
    appendix_models = _appendix_d_models(paper, run_models)
    if appendix_models:
        names = paper["appendix_d"]["models"]
        lines += [
            f"The run's models {', '.join(f'{m} ({names[m]})' for m in appendix_models)} are those of the "
            f"paper's Appendix D replication; they are compared with what the paper says of it "
            f"({paper['appendix_d']['claim']}), model by model."
            + (
                " The main study's per-model values concern its three Qwen-lineage models and are not compared."
                if not set(run_models) & set(paper["models"])
                else ""
            ),
            "",
        ]
    elif not set(run_models) <= set(paper["models"]):
        lines += [
            "The run's model is not one of the paper's, so each paper value is shown beside this "
            "model's number and the verdict reads *different model*.",
            "",
        ]
    lines += [
        "## Parsing and retained pairs",
        "",
        "A pair is retained only if its Yes/No answer parses on both sides in both arms; `unprobed` counts "
        "the retained pairs left out of the CDPG curves because a depth probability is missing on a side.",
        "",
        markdown_table(tables["parse_counts"], 0, missing="—"),
        "",
        "## Table 2: created vs resolved flips",
        "",
        markdown_table(t2, 3, missing="—"),
        "",
        "## Reproduced vs paper",
        "",
        "Paper values as the paper prints them; the run's number in the same unit with one digit more.",
        "",
        markdown_table(comparison_view(cmp_table), 3, missing="—"),
        "",
        "## Probing cost",
        "",
        "Generated tokens of both arms against the tokens evaluated by the CDPG and nothink probes "
        "(evaluated: run on the KV state each generation left, 0 for cached results; reused: what a "
        "separate probe job sharing each prefix across cuts would evaluate; naive: each prefix re-fed "
        "from scratch).",
        "",
        markdown_table(cost, 3, missing="—"),
        "",
    ]
    if len(cost) and {"generated_tokens", "probe_tokens_reused", "probe_tokens_naive"} <= set(cost.columns):
        gen, reused, naive = (
            float(cost[c].sum()) for c in ("generated_tokens", "probe_tokens_reused", "probe_tokens_naive")
        )
        fwd = gen + float(cost["prompt_tokens"].sum()) if "prompt_tokens" in cost.columns else math.nan
        if gen and "probe_tokens_evaluated" in cost.columns:
            ev = float(cost["probe_tokens_evaluated"].sum())
            lines += [
                f"Probing alongside generation evaluated {ev:,.0f} tokens: {ev / gen:.2f}x the generated "
                f"tokens, {ev / fwd:.2f}x all forward tokens of generation.",
                "",
            ]
        if gen:
            lines += [
                f"A separate probe job would evaluate {reused:,.0f} tokens with prefix reuse "
                f"({naive:,.0f} if every prefix were re-fed) against {gen:,.0f} generated tokens: "
                f"{reused / gen:.2f}x the generated tokens ({naive / gen:.2f}x naive), {reused / fwd:.2f}x "
                f"all forward tokens of generation (prompt + generated).",
                "",
            ]
    if wall is not None and len(wall):
        lines += ["## Wall time (Snakemake benchmarks)", "", markdown_table(wall, 1, missing="—"), ""]
    verdicts = cmp_table["verdict"].value_counts()
    lines += ["## Summary", "", ", ".join(f"{k}: {int(n)}" for k, n in verdicts.items()), ""]
    return "\n".join(lines)


def wall_time_summary(paths: list[str], root: str) -> pd.DataFrame:
    """Per step (the first folder under ``root``, e.g. generate, probe): jobs, wall seconds and CPU
    seconds summed over Snakemake benchmark TSVs."""
    rows = []
    for p in paths:
        try:
            b = pd.read_csv(p, sep="\t")
        except (OSError, pd.errors.EmptyDataError):
            continue
        rel = Path(p).resolve().relative_to(Path(root).resolve())
        cpu = float(b["cpu_time"].iloc[0]) if "cpu_time" in b.columns else math.nan
        rows.append({"step": rel.parts[0], "jobs": 1, "wall_s": float(b["s"].iloc[0]), "cpu_s": cpu})
    if not rows:
        return pd.DataFrame(columns=["step", "jobs", "wall_s", "cpu_s"])
    return pd.DataFrame(rows).groupby("step", as_index=False).sum()
