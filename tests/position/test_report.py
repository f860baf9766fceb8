"""The reproduced-vs-paper comparison."""

import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from thinkbias.position.model_kinds import model_kinds
from thinkbias.position.report import claim_measure, comparison_table, report_markdown, reproduced_value, verdict

PAPER = yaml.safe_load((Path(__file__).resolve().parents[2] / "resources/paper/position.yaml").read_text())


def _tables():
    t2 = pd.DataFrame(
        {
            "benchmark": ["mmlu", "mmlu"],
            "model": ["deepseek-r1-api", "x"],
            "mode": ["reasoning", "direct"],
            "pbs": [0.03, 0.5],
            "accuracy": [0.9, 0.3],
            "ccp": [0.7, 0.0],
            "extraction_rate": [0.99, 0.9],
            "extraction_rate_with_fallback": [1.0, 0.97],
            "n_records": [800, 40],
            "length": [3000.0, 10.0],
        }
    )
    t1 = pd.DataFrame(
        {
            "benchmark": "mmlu",
            "model": ["deepseek-r1-api", "x"],
            "mode": ["reasoning", "direct"],
            "partial_rho": [0.2, 0.01],
            "p_value": [0.01, 0.9],
        }
    )
    t3 = pd.DataFrame(
        {
            "benchmark": "mmlu",
            "model": "deepseek-r1-api",
            "mode": "reasoning",
            "k": [3, 5],
            "endpoint_gradient": [0.1, -0.05],
        }
    )
    q = pd.DataFrame(
        {
            "benchmark": "mmlu",
            "model": "deepseek-r1-api",
            "mode": "reasoning",
            "bin": [1, 2, 3, 4],
            "pbs": [0.0, 0.01, 0.02, 0.08],
        }
    )
    return {"table1": t1, "table2": t2, "table3": t3, "quartiles": q}


def test_values_found_through_the_model_map():
    entry = next(e for e in PAPER["values"] if e["id"] == "api_pbs")
    assert reproduced_value(entry, _tables(), PAPER["models"]) == pytest.approx(0.03)
    q4 = next(e for e in PAPER["values"] if e["id"] == "q4_r1api")
    assert reproduced_value(q4, _tables(), PAPER["models"]) == pytest.approx(0.08)
    missing = next(e for e in PAPER["values"] if e["id"] == "llama_direct_mmlu")
    assert math.isnan(reproduced_value(missing, _tables(), PAPER["models"]))


def test_claims():
    t = _tables()
    assert claim_measure("share_reasoning_rho_positive_significant", t)[0] == 1.0
    # the paper's extraction claims compare the cascade-only rate (Appendix B), not the rate with fallback
    value, detail = claim_measure("min_extraction_rate", t)
    assert value == pytest.approx(0.9) and "0.970 with the fallback" in detail
    assert claim_measure("min_extraction_rate_reasoning", t)[0] == pytest.approx(0.99)
    assert claim_measure("share_quartile_monotonic", t)[0] == 1.0
    assert claim_measure("share_endpoint_positive", t)[0] == 0.5
    assert claim_measure("mean_endpoint_gradient", t)[0] == pytest.approx(0.025)


def test_verdicts_and_report():
    assert verdict(0.03, 0.019, "=", 0.015) == "match" and verdict(0.05, 0.019, "=", 0.015) == "differs"
    assert verdict(0.96, 0.95, ">", None) == "match" and verdict(math.nan, 1, "=", 0) == "n/a"
    comp = comparison_table(PAPER, _tables()).set_index("id")
    assert comp.loc["api_pbs", "difference"] == pytest.approx(0.011)
    assert comp.loc["extraction_min", "verdict"] == "differs"
    md = report_markdown(PAPER, _tables(), "note")
    assert md.startswith("# Position study") and "api_pbs" in md and "note" in md


def _paper_like_tables():
    """Tables 1 and the quartiles of a run that matches the paper: 13 reasoning-mode configurations,
    12 with rho between 0.11 and 0.41 (p < 0.05) and Qwen-Instruct-CoT on GPQA positive but not
    significant (§5.2); the published MMLU quartiles of R1-Qwen-7B, R1-Llama-8B and the API anchor
    (0.000 / 0.000 / 0.007 / 0.071, not strictly increasing), increasing quartiles elsewhere (§5.1)."""
    models = PAPER["models"]
    configs = [
        (b, m, mode)
        for m, mode in (
            ("R1-Qwen-7B", "reasoning"),
            ("R1-Llama-8B", "reasoning"),
            ("Qwen-Instruct", "cot"),
            ("Llama-Instruct", "cot"),
        )
        for b in ("mmlu", "arc", "gpqa")
    ] + [("mmlu", "DeepSeek-R1", "reasoning")]
    rhos = [0.11, 0.41, 0.25, 0.30, 0.18, 0.22, 0.15, 0.20, 0.09, 0.14, 0.12, 0.35, 0.19]
    ps = [0.01, 1e-9, 1e-5, 1e-6, 1e-3, 1e-4, 0.02, 1e-3, 0.21, 0.03, 0.04, 1e-7, 0.01]
    t1 = pd.DataFrame(
        [
            {"benchmark": b, "model": models[m], "mode": mode, "partial_rho": r, "p_value": p}
            for (b, m, mode), r, p in zip(configs, rhos, ps)
        ]
    )
    published = {
        ("mmlu", "R1-Qwen-7B"): [0.107, 0.151, 0.213, 0.385],
        ("mmlu", "R1-Llama-8B"): [0.091, 0.187, 0.235, 0.358],
        ("mmlu", "DeepSeek-R1"): [0.000, 0.000, 0.007, 0.071],
    }
    q = pd.DataFrame(
        [
            {"benchmark": b, "model": models[m], "mode": mode, "bin": i + 1, "pbs": v}
            for b, m, mode in configs
            for i, v in enumerate(published.get((b, m), [0.10, 0.15, 0.20, 0.30]))
        ]
    )
    return {"table1": t1, "quartiles": q}


CLAIMS = ["rho_share", "rho_min", "rho_max", "quartile_monotonic"]


def registry_kinds(tables: dict) -> pd.DataFrame:
    """The models' kinds as the workflow reads them from the registry (DeepSeek-R1 is an API entry)."""
    models = set(tables["quartiles"]["model"])
    return model_kinds(models, {}, {m: "openai" if m == "deepseek-r1-api" else "llamacpp" for m in models})


def test_claims_are_scoped_as_the_paper_states_them():
    tables = _paper_like_tables()
    comp = comparison_table(PAPER, tables, registry_kinds(tables)).set_index("id")
    assert (comp.loc[CLAIMS, "verdict"] == "match").all(), comp.loc[CLAIMS, ["reproduced", "scope"]]
    assert comp.loc["rho_min", "reproduced"] == pytest.approx(0.11)  # not the non-significant 0.09
    assert "12 of 13" in comp.loc["rho_min", "scope"]
    assert comp.loc["quartile_monotonic", "scope"].startswith(
        "this run: 12/12 open-weight configurations [API, left out: deepseek-r1-api (registry (backend openai)); "
        "open-weight: "
    )
    # without knowing the API model, the anchor's flat first quartiles count against the claim
    assert comparison_table(PAPER, tables).set_index("id").loc["quartile_monotonic", "verdict"] == "differs"


def test_a_run_that_differs_is_reported_as_differing():
    tables = _paper_like_tables()
    t1 = tables["table1"].copy()
    t1.loc[2, ["partial_rho", "p_value"]] = [0.05, 0.01]  # significant, below the paper's range
    q = tables["quartiles"].copy()
    q.loc[(q["benchmark"] == "arc") & (q["bin"] == 3), "pbs"] = 0.12  # an open-weight dip
    comp = comparison_table(PAPER, {"table1": t1, "quartiles": q}, registry_kinds(tables)).set_index("id")
    assert comp.loc["rho_min", "verdict"] == "differs" and comp.loc["rho_min", "reproduced"] == pytest.approx(0.05)
    assert comp.loc["quartile_monotonic", "verdict"] == "differs"
    assert comp.loc["quartile_monotonic", "reproduced"] == pytest.approx(8 / 12)


def test_p_value_claims_compare_exact_log10_p_and_can_fail():
    # the paper's truncation claim p < 1e-13 (R1-Qwen-7B, MMLU) on the log10 column: 2,400 continuations
    # split perfectly underflow p to 0 but keep log10 p = -522.9; a weak effect must not pass
    from thinkbias.position.truncation import before_after_test

    def truncation(outcomes: pd.DataFrame) -> dict:
        row = {
            "benchmark": "mmlu",
            "model": PAPER["models"]["R1-Qwen-7B"],
            "mode": "reasoning",
            **before_after_test(outcomes),
        }
        return {"truncation_test": pd.DataFrame([row])}

    entry = next(e for e in PAPER["values"] if e["id"] == "trunc_p_r1qwen")
    perfect = pd.DataFrame({"side": ["before"] * 1200 + ["after"] * 1200, "changed": [1.0] * 1200 + [0.0] * 1200})
    weak = pd.DataFrame(
        {"side": ["before"] * 100 + ["after"] * 100, "changed": [1.0] * 30 + [0.0] * 70 + [1.0] * 10 + [0.0] * 90}
    )  # p = 4e-4
    strong = truncation(perfect)
    assert strong["truncation_test"]["p_value"].iloc[0] == 0.0
    got = reproduced_value(entry, strong, PAPER["models"])
    assert got == pytest.approx(-522.94, abs=0.01) and verdict(got, entry["value"], entry["relation"], None) == "match"
    got = reproduced_value(entry, truncation(weak), PAPER["models"])
    assert got == pytest.approx(math.log10(4.07e-4), abs=0.01) and verdict(got, entry["value"], "<=", None) == "differs"
    assert verdict(-math.inf, entry["value"], "<=", None) == "not finite"
    md = report_markdown(PAPER, strong, "note")
    assert "| 2400.000 | 1.14e-523 | -522.942 |" in md and "| -13.000 | <= | -522.942 | -509.942 | match |" in md
