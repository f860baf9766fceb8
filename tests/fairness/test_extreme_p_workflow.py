"""The paper's pooled McNemar (b = 620, c = 3508, p < 1e-485) through the real workflow: a
bring-your-own predictions table with those cells over the paper's three models and datasets gives
Table 2's exact, finite log10 p, a report that prints p as 2.48e-486 and checks the paper's claim."""

import pandas as pd
import pytest

from tests.fairness.test_byo import PROTO
from tests.helpers import run_snakemake, tiny_config

MODELS = ("qwq-32b-awq", "r1-distill-qwen-32b-awq", "qwen3-32b-awq")
DATASETS = ("adult", "compas", "credit")
# per setting; summed over the nine settings: a = 90, b = 620, c = 3508, d = 68 (the paper's pooled b, c, d)
CELLS = [{"a": 10, "b": 69, "c": 390, "d": 8}] * 8 + [{"a": 10, "b": 68, "c": 388, "d": 4}]


def paper_scale_predictions() -> pd.DataFrame:
    rows = []
    settings = [(m, d) for m in MODELS for d in DATASETS]
    for (model, dataset), counts in zip(settings, CELLS):
        for cell, n in counts.items():
            for i in range(n):
                ya_n, yb_n, ya_t, yb_t = PROTO[cell]
                for side, y_n, y_t in (("alpha", ya_n, ya_t), ("alpha_prime", yb_n, yb_t)):
                    for arm, y in (("nothink", y_n), ("think", y_t)):
                        rows.append(
                            {
                                "dataset": dataset,
                                "model": model,
                                "pair_id": f"{cell}{i}",
                                "side": side,
                                "arm": arm,
                                "answer": "Yes" if y else "No",
                            }
                        )
    return pd.DataFrame(rows)


@pytest.mark.slow
def test_paper_pooled_counts_give_an_exact_p_and_a_checked_claim(workflow_dir):
    path = workflow_dir / "paper-scale.csv"
    paper_scale_predictions().to_csv(path, index=False)
    cfg = tiny_config(fairness={"run": "paper-scale", "predictions": str(path), "bootstrap_samples": 50})
    run_snakemake(workflow_dir, ["--cores", "2", "fairness_report"], config=cfg)
    out = workflow_dir / "results/fairness/paper-scale"
    t2 = pd.read_csv(out / "tables/table2.csv")
    pooled = t2[t2.model == "pooled"].iloc[0]
    assert (pooled.b, pooled.c, pooled.d) == (620, 3508, 68)
    assert pooled.mcnemar_p == 0.0  # below a double's range
    assert pooled.mcnemar_log10_p == pytest.approx(-485.6048358107389, abs=1e-6)  # tests/stats: integer sums
    report = (out / "report.md").read_text()
    assert "∞" not in report
    assert "| pooled | pooled | 90 | 620 | 3508 | 68 | 4286 | 2.48e-486 | -485.605 |" in report
    claim = next(line for line in report.splitlines() if line.startswith("| pooled_log10_p |"))
    assert "| <= -485 | -485.605 |" in claim and "| match |" in claim
    per_setting = next(line for line in report.splitlines() if line.startswith("| max_log10_p |"))
    assert "| match |" in per_setting
