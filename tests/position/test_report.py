"""The reproduced-vs-paper comparison."""

import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from thinkbias.position.report import claim_measure, comparison_table, report_markdown, reproduced_value, verdict

PAPER = yaml.safe_load((Path(__file__).resolve().parents[2] / "resources/paper/position.yaml").read_text())


def _tables():
    t2 = pd.DataFrame({"benchmark": ["mmlu", "mmlu"], "model": ["deepseek-r1-api", "x"], "mode": ["reasoning", "direct"],
                       "pbs": [0.03, 0.5], "accuracy": [0.9, 0.3], "ccp": [0.7, 0.0], "extraction_rate": [0.99, 0.9],
                       "extraction_rate_with_fallback": [1.0, 0.97],
                       "n_records": [800, 40], "length": [3000.0, 10.0]})
    t1 = pd.DataFrame({"benchmark": "mmlu", "model": ["deepseek-r1-api", "x"], "mode": ["reasoning", "direct"],
                       "partial_rho": [0.2, 0.01], "p_value": [0.01, 0.9]})
    t3 = pd.DataFrame({"benchmark": "mmlu", "model": "deepseek-r1-api", "mode": "reasoning", "k": [3, 5],
                       "endpoint_gradient": [0.1, -0.05]})
    q = pd.DataFrame({"benchmark": "mmlu", "model": "deepseek-r1-api", "mode": "reasoning", "bin": [1, 2, 3, 4],
                      "pbs": [0.0, 0.01, 0.02, 0.08]})
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
