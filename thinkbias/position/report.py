"""The reproduced-vs-paper report of the position study (Markdown).

The paper's numbers live in resources/paper/position.yaml in two kinds:
- ``values``: one number of one configuration, found in a table (``table``, ``column``) by a
  ``where`` filter whose ``model`` is the paper's model name (mapped to registry ids by the file's
  ``models`` map). They are compared only when this run has that configuration.
- ``claims``: statements over every configuration of the run (e.g. "extraction rate > 95% in every
  configuration"), computed by ``claim_measure`` on whatever this config produced, over the scope
  the paper states: the partial-rho range (0.11-0.41) over the reasoning-mode configurations with a
  significantly positive rho (12 of 13), quartile monotonicity (12/12) over the open-weight ones
  (the API anchor, whose first two quartiles are both 0.000, is left out). Which models are API
  models is a ``thinkbias.position.model_kinds`` table (declared in ``position.model_kinds`` or read
  from the registry); the claim's scope names each model's kind and its source.
"""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np
import pandas as pd

from thinkbias.markdown import markdown_table
from thinkbias.position.lengthbins import monotonicity
from thinkbias.position.model_kinds import api_models, kinds_note


def _select(table: pd.DataFrame, where: Mapping, model_map: Mapping[str, str]) -> pd.DataFrame:
    sel = table
    for key, val in where.items():
        if key in ("model", "reasoning", "reference"):
            val = _map_model(val, model_map)
        if key not in sel.columns:
            return sel.iloc[0:0]
        col = sel[key]
        sel = (
            sel[col.astype(str) == str(val)]
            if not isinstance(val, (int, float))
            else sel[np.isclose(col.astype(float), float(val))]
        )
    return sel


def _map_model(name: str, model_map: Mapping[str, str]) -> str:
    """Paper model name -> registry id; "name/mode" pairs map their model part."""
    if "/" in str(name):
        m, mode = str(name).split("/", 1)
        return f"{model_map.get(m, m)}/{mode}"
    return model_map.get(name, name)


def reproduced_value(entry: Mapping, tables: Mapping[str, pd.DataFrame], model_map: Mapping[str, str]) -> float:
    """The run's number for one paper value (NaN when this run lacks the configuration)."""
    table = tables.get(entry["table"])
    if table is None or table.empty:
        return math.nan
    sel = _select(table, entry.get("where", {}), model_map)
    if sel.empty or entry["column"] not in sel:
        return math.nan
    return float(sel[entry["column"]].iloc[0])


def claim_measure(
    name: str, tables: Mapping[str, pd.DataFrame], kinds: pd.DataFrame | None = None
) -> tuple[float, str]:
    """(value, detail) of a run-level measure over the configurations of this run the claim is about
    (module docstring); ``kinds``: the models' kinds (``thinkbias.position.model_kinds:model_kinds``),
    whose api models are not open-weight; without it every model counts as open-weight."""
    t1, t2, t3, q = (tables.get(k, pd.DataFrame()) for k in ("table1", "table2", "table3", "quartiles"))
    if name == "share_reasoning_rho_positive_significant":
        r = t1[t1["mode"] != "direct"] if len(t1) else t1
        k = int(_significantly_positive(r).sum()) if len(r) else 0
        return (k / len(r) if len(r) else math.nan), f"{k}/{len(r)} configurations"
    if name in ("min_reasoning_rho", "max_reasoning_rho"):
        r = t1[(t1["mode"] != "direct")] if len(t1) else t1
        v = r.loc[_significantly_positive(r), "partial_rho"] if len(r) else pd.Series(dtype=float)
        return (
            (float(v.min() if name.startswith("min") else v.max()) if len(v) else math.nan),
            f"{len(v)} of {len(r)} reasoning-mode configurations (rho > 0, p < 0.05)",
        )
    if name in ("min_extraction_rate", "min_extraction_rate_reasoning"):
        s = t2 if name == "min_extraction_rate" or not len(t2) else t2[t2["mode"] == "reasoning"]
        if not len(s):
            return math.nan, "0 configurations"
        with_fallback = s["extraction_rate_with_fallback"].min() if "extraction_rate_with_fallback" in s else math.nan
        return float(s["extraction_rate"].min()), (
            f"{len(s)} configurations, {int(s['n_records'].sum())} records; "
            f"cascade only (App. B), {with_fallback:.3f} with the fallback"
        )
    if name == "share_quartile_monotonic":
        reasoning = q[q["mode"] != "direct"] if len(q) else q
        qq = reasoning[~reasoning["model"].astype(str).isin(api_models(kinds))] if len(q) else q
        groups = list(qq.groupby(["benchmark", "model", "mode"], sort=False)) if len(qq) else []
        k = sum(monotonicity(g.sort_values("bin")["pbs"].to_numpy())[0] for _, g in groups)
        note = kinds_note(kinds, reasoning["model"].astype(str)) if len(reasoning) else ""
        detail = f"{k}/{len(groups)} open-weight configurations" + (f" [{note}]" if note else "")
        return (k / len(groups) if groups else math.nan), detail
    t3 = t3[t3["mode"] == "reasoning"] if len(t3) else t3
    if name == "share_endpoint_positive":
        v = t3["endpoint_gradient"].dropna() if len(t3) else pd.Series(dtype=float)
        k = int((v > 0).sum())
        return (k / len(v) if len(v) else math.nan), f"{k}/{len(v)} cells"
    if name == "mean_endpoint_gradient":
        v = t3["endpoint_gradient"].dropna() if len(t3) else pd.Series(dtype=float)
        return (float(v.mean()) if len(v) else math.nan), f"{len(v)} cells"
    raise ValueError(f"unknown claim measure '{name}'")


def _significantly_positive(table1: pd.DataFrame) -> pd.Series:
    return (table1["partial_rho"] > 0) & (table1["p_value"] < 0.05)


def verdict(reproduced: float, paper: float, relation: str, tolerance: float | None) -> str:
    """ "match" / "differs" / "n/a" / "not finite" (an infinite number is never a match) for one comparison."""
    if reproduced is None or math.isnan(reproduced):
        return "n/a"
    if math.isinf(reproduced):
        return "not finite"
    if relation == ">=":
        return "match" if reproduced >= paper else "differs"
    if relation == "<=":
        return "match" if reproduced <= paper else "differs"
    if relation == ">":
        return "match" if reproduced > paper else "differs"
    return "match" if abs(reproduced - paper) <= (tolerance or 0.0) else "differs"


def comparison_table(
    paper: Mapping, tables: Mapping[str, pd.DataFrame], kinds: pd.DataFrame | None = None
) -> pd.DataFrame:
    """One row per paper value and claim: paper value, reproduced value, difference, verdict
    (``kinds``: the models' kinds, see :func:`claim_measure`)."""
    model_map = paper.get("models", {})
    rows = []
    for e in paper.get("values", []):
        got = reproduced_value(e, tables, model_map)
        where = ", ".join(f"{k}={v}" for k, v in e.get("where", {}).items())
        rows.append(
            {
                "id": e["id"],
                "quantity": e["quantity"],
                "scope": where,
                "paper": float(e["value"]),
                "relation": e.get("relation", "="),
                "reproduced": got,
                "difference": got - float(e["value"]) if not math.isnan(got) else math.nan,
                "verdict": verdict(got, float(e["value"]), e.get("relation", "="), e.get("tolerance")),
                "source": e.get("source", ""),
            }
        )
    for c in paper.get("claims", []):
        got, detail = claim_measure(c["measure"], tables, kinds)
        rows.append(
            {
                "id": c["id"],
                "quantity": c["quantity"],
                "scope": f"this run: {detail}",
                "paper": float(c["value"]),
                "relation": c.get("relation", "="),
                "reproduced": got,
                "difference": got - float(c["value"]) if not math.isnan(got) else math.nan,
                "verdict": verdict(got, float(c["value"]), c.get("relation", "="), c.get("tolerance")),
                "source": c.get("source", ""),
            }
        )
    return pd.DataFrame(rows)


def report_markdown(
    paper: Mapping, tables: Mapping[str, pd.DataFrame], config_note: str, kinds: pd.DataFrame | None = None
) -> str:
    """The whole report: setup note, Table 2 of this run, the models' kinds, the comparison, the
    other tables."""
    comp = comparison_table(paper, tables, kinds)
    compared = comp[comp["verdict"] != "n/a"]
    parts = [
        "# Position study: reproduced vs paper\n",
        f"Paper: {paper.get('paper', '')}\n",
        config_note + "\n",
        f"Compared {len(compared)} of {len(comp)} reported numbers "
        f"({int((compared['verdict'] == 'match').sum())} within tolerance or bound); the rest need a "
        "configuration this run does not have (n/a). Difference = reproduced - paper.\n",
        "## This run: per-configuration summary (Table 2)\n",
        markdown_table(tables.get("table2", pd.DataFrame()), missing="-"),
    ]
    if kinds is not None and len(kinds):
        parts += [
            "## Model kinds\n",
            "Claims over open-weight configurations leave out the api models. A kind comes from "
            "`position.model_kinds`, else from the registry (backend openai = api), else it is open-weight, "
            "not declared.\n",
            markdown_table(kinds, missing="-"),
        ]
    parts += [
        "## Reproduced vs paper\n",
        markdown_table(comp, missing="-"),
    ]
    for key, title in (
        ("table1", "Table 1: partial correlation"),
        ("quartiles", "PBS by length quartile"),
        ("table3", "Table 3: length-bin robustness"),
        ("table4", "Table 4: Wilcoxon"),
        ("truncation_buckets", "Truncation by absolute position"),
        ("truncation_test", "Truncation before vs after CCP"),
    ):
        if key in tables:
            parts += [f"## {title}\n", markdown_table(tables[key], missing="-")]
    return "\n".join(parts)
