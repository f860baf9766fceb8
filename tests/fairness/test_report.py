"""Report verdicts: same model -> match / differs by tolerance; other model -> 'different model'."""

import pandas as pd
import pytest

from thinkbias.fairness.report import compare, render_report

PAPER = {
    "paper": "P",
    "models": {"qwq-32b-awq": "QwQ-32B"},
    "datasets": ["adult"],
    "values": [
        {
            "id": "c",
            "quantity": "c",
            "measure": "table2.c",
            "model": "pooled",
            "dataset": "pooled",
            "value": 10,
            "relation": "=",
            "tolerance": 1,
            "source": "s",
        },
        {
            "id": "dg",
            "quantity": "dg",
            "measure": "figure2.delta_dgroup",
            "model": "qwq-32b-awq",
            "dataset": "adult",
            "value": -0.018,
            "relation": "=",
            "tolerance": 0.01,
            "source": "s",
        },
        {
            "id": "gap",
            "quantity": "gap",
            "measure": "table3_gaps.max_abs_gap",
            "model": "qwq-32b-awq",
            "dataset": "adult",
            "value": 0.014,
            "relation": "<=",
            "source": "s",
        },
        {
            "id": "cr",
            "quantity": "x",
            "measure": "figure2.delta_dcf",
            "model": "qwq-32b-awq",
            "dataset": "credit",
            "value": 0.1,
            "relation": "=",
            "tolerance": 0.01,
            "source": "s",
        },
    ],
}


def tables(model):
    return {
        "table2": pd.DataFrame(
            [
                {"model": model, "dataset": "adult", "c": 12, "b": 2},
                {"model": "pooled", "dataset": "pooled", "c": 12, "b": 2},
            ]
        ),
        "figure2": pd.DataFrame([{"model": model, "dataset": "adult", "delta_dgroup": -0.02, "delta_dcf": 0.1}]),
        "table3_gaps": pd.DataFrame([{"model": model, "dataset": "adult", "max_abs_gap": 0.02}]),
        "parse_counts": pd.DataFrame([{"model": model, "dataset": "adult", "pairs": 5, "N": 5}]),
    }


def test_verdicts_same_model():
    t = compare(tables("qwq-32b-awq"), {**PAPER}, ["qwq-32b-awq"], ["adult"]).set_index("id")
    assert t.loc["c", "verdict"] == "differs" and t.loc["c", "difference"] == 2
    assert t.loc["dg", "verdict"] == "match"
    assert t.loc["gap", "verdict"] == "differs"
    assert t.loc["cr", "verdict"] == "not run"


def test_verdicts_other_model():
    t = compare(tables("smollm2-135m"), PAPER, ["smollm2-135m"], ["adult"]).set_index("id")
    assert set(t.loc[["c", "dg", "gap"], "verdict"]) == {"different model"}
    assert t.loc["dg", "reproduced"] == -0.02  # the run's model on the same dataset is shown
    assert "smollm2-135m" in t.loc["dg", "model"]
    text = render_report(
        "r",
        {**tables("smollm2-135m"), "table2": tables("smollm2-135m")["table2"]},
        PAPER,
        ["smollm2-135m"],
        ["adult"],
        pd.DataFrame([{"model": "smollm2-135m", "generated_tokens": 5}]),
    )
    assert "different model" in text and "| c |" in text


def test_zero_retained_pairs_still_give_every_table_and_a_report():
    from thinkbias.fairness.analysis import PRODUCTS, build_cells

    pred = pd.DataFrame(
        [
            dict(
                dataset="adult",
                model="m",
                pair_id="1",
                side=s,
                arm=a,
                answer=None if (s, a) == ("alpha", "think") else "Yes",
            )
            for s in ("alpha", "alpha_prime")
            for a in ("nothink", "think")
        ]
    )
    cells, counts, identities = build_cells(pred)
    assert counts.N.iloc[0] == 0 and cells.empty and identities.empty
    tables = {name: f(cells, n_boot=10, seed=1, main_K=10) for name, f in PRODUCTS.items()}
    tables["parse_counts"] = counts
    assert all(t.empty for name, t in tables.items() if name not in ("table2", "parse_counts"))
    text = render_report("r", tables, PAPER, ["m"], ["adult"], pd.DataFrame())
    assert "different model" in text


def test_wall_time_summary(tmp_path):
    from thinkbias.fairness.report import wall_time_summary

    root = tmp_path / "bench"
    for step, s in (("generate", 2.5), ("generate", 1.5), ("probe", 1.0)):
        d = root / step / f"x{s}"
        d.mkdir(parents=True)
        (d / "shard-0.tsv").write_text(f"s\th:m:s\tcpu_time\n{s}\t0:00:02\t{s / 2}\n")
    w = wall_time_summary(sorted(str(p) for p in root.rglob("*.tsv")), str(root)).set_index("step")
    assert w.loc["generate", "jobs"] == 2 and w.loc["generate", "wall_s"] == 4.0 and w.loc["probe", "cpu_s"] == 0.5


def test_pooled_p_claim_can_fail_and_matches_at_the_exact_value():
    """The paper's "pooled p < 1e-485" (resources/paper/fairness.yaml) against Table 2's pooled log10 p."""
    from pathlib import Path

    import yaml

    from tests.fairness.test_cells import pairs_from_cells
    from thinkbias.fairness.cells import assign_cells, contingency_table

    paper = yaml.safe_load((Path(__file__).parents[2] / "resources/paper/fairness.yaml").read_text())
    paper = {**paper, "values": [v for v in paper["values"] if v["id"] == "pooled_log10_p"]}
    models, datasets = list(paper["models"]), list(paper["datasets"])
    # the paper's pooled cells b = 620, c = 3508 over its three models (one dataset each is enough here)
    parts = [
        pairs_from_cells(counts, model=m, dataset=d)
        for m, d, counts in zip(
            models,
            datasets,
            (
                {"a": 5, "b": 200, "c": 1200, "d": 20},
                {"a": 5, "b": 220, "c": 1100, "d": 28},
                {"a": 5, "b": 200, "c": 1208, "d": 20},
            ),
        )
    ]
    table2 = contingency_table(assign_cells(pd.concat(parts, ignore_index=True)))
    pooled = table2[table2["model"] == "pooled"].iloc[0]
    assert (pooled.b, pooled.c, pooled.mcnemar_p) == (620, 3508, 0.0)

    def verdict_of(log10_p: float) -> pd.Series:
        t = table2.copy()
        t.loc[t["model"] == "pooled", "mcnemar_log10_p"] = log10_p
        return compare({"table2": t}, paper, models, datasets).iloc[0]

    real = compare({"table2": table2}, paper, models, datasets).iloc[0]
    assert real.verdict == "match" and real.reproduced == pytest.approx(-485.6048358107389, abs=1e-6)
    assert verdict_of(-400.0).verdict == "differs"
    assert verdict_of(-484.9).verdict == "differs"
    assert verdict_of(float("-inf")).verdict == "not finite"  # what an underflowed log used to give
    text = render_report(
        "r", {"table2": table2, "parse_counts": pd.DataFrame()}, paper, models, datasets, pd.DataFrame()
    )
    pooled_line = next(line for line in text.splitlines() if line.startswith("| pooled | pooled |"))
    assert "| 2.48e-486 | -485.605 |" in pooled_line and "∞" not in text
    assert "| pooled_log10_p |" in text and "| -485.605 |" in text and "| match |" in text


def _real_paper():
    from pathlib import Path

    import yaml

    return yaml.safe_load((Path(__file__).resolve().parents[2] / "resources/paper/fairness.yaml").read_text())


def test_paper_values_print_with_their_own_precision():
    paper = _real_paper()
    paper["values"] = [v for v in paper["values"] if v["id"] in ("qwen3_adult_nn_nn", "pooled_c_over_b", "pooled_c")]
    t4 = pd.DataFrame([{"model": "qwen3-32b-awq", "dataset": "adult", "from": "NN", "to_NN": 0.8734}])
    tabs = {
        **tables("qwen3-32b-awq"),
        "table4": t4,
        "table2": pd.DataFrame(
            [
                {"model": "qwen3-32b-awq", "dataset": "adult", "c": 3416, "b": 620},
                {"model": "pooled", "dataset": "pooled", "c": 3416, "b": 620, "c_over_b": 3416 / 620},
            ]
        ),
    }
    t = compare(tabs, paper, ["qwen3-32b-awq"], ["adult"]).set_index("id")
    assert t.loc["qwen3_adult_nn_nn", "paper"] == "89%"
    assert t.loc["qwen3_adult_nn_nn", "reproduced_shown"] == "87.3%"
    assert t.loc["qwen3_adult_nn_nn", "difference_shown"] == "-1.7 pp"
    assert t.loc["qwen3_adult_nn_nn", "verdict"] == "match"
    assert "Table 4's own digits are not in the text" in t.loc["qwen3_adult_nn_nn", "source"]
    assert t.loc["pooled_c_over_b", "paper"] == "≈ 5.7×" and t.loc["pooled_c_over_b", "reproduced_shown"] == "5.51×"
    assert t.loc["pooled_c", "reproduced_shown"] == "3416"
    text = render_report("r", tabs, paper, ["qwen3-32b-awq"], ["adult"], pd.DataFrame())
    assert "| 89% | 87.3% | -1.7 pp |" in text and "0.890" not in text and "5.700" not in text


def appendix_d_tables():
    rows = [
        ("gemma-2-27b-it-awq", "adult", 40, 10),
        ("gemma-2-27b-it-awq", "compas", 60, 12),
        ("gemma-2-27b-it-awq", "credit", 20, 5),
        ("llama-3.1-8b-instruct", "adult", 30, 2),
        ("llama-3.1-8b-instruct", "compas", 9, 12),
        ("llama-3.1-8b-instruct", "credit", 25, 3),
    ]
    t2 = pd.DataFrame(
        [{"model": m, "dataset": d, "c": c, "b": b} for m, d, c, b in rows]
        + [{"model": "pooled", "dataset": "pooled", "c": 184, "b": 44}]
    )
    return {**tables("x"), "table2": t2}


def test_an_appendix_d_run_is_compared_with_what_the_paper_says_of_appendix_d():
    paper = _real_paper()
    run = ["gemma-2-27b-it-awq", "llama-3.1-8b-instruct"]
    t = compare(appendix_d_tables(), paper, run, ["adult", "compas", "credit"]).set_index("id")
    # only the Appendix D values: no main-study value with a stand-in model
    assert set(t.index) == {"appd_gemma_c_gt_b", "appd_gemma_c_over_b", "appd_llama_c_gt_b", "appd_llama_c_over_b"}
    assert "different model" not in set(t["verdict"])
    assert t.loc["appd_gemma_c_gt_b", "reproduced"] == 3 and t.loc["appd_gemma_c_gt_b", "verdict"] == "match"
    assert t.loc["appd_gemma_c_over_b", "reproduced"] == pytest.approx(120 / 27)  # 4.44: within 2x of 5.7
    assert t.loc["appd_gemma_c_over_b", "verdict"] == "match"
    assert t.loc["appd_llama_c_gt_b", "reproduced"] == 2 and t.loc["appd_llama_c_gt_b", "verdict"] == "differs"
    assert t.loc["appd_llama_c_over_b", "reproduced"] == pytest.approx(64 / 17)  # 3.76
    assert t.loc["appd_llama_c_over_b", "model"] == "llama-3.1-8b-instruct (Llama-3.1-8B)"
    assert t.loc["appd_llama_c_over_b", "source"].startswith("Appendix D: §4.2")
    text = render_report("appendix-d", appendix_d_tables(), paper, run, ["adult", "compas", "credit"], pd.DataFrame())
    assert "not one of the paper's" not in text
    assert "gemma-2-27b-it-awq (gemma-2-27B)" in text and "Appendix D replication" in text
    # a single Appendix D model: the other one's values read "not run"
    one = compare(appendix_d_tables(), paper, ["gemma-2-27b-it-awq"], ["adult", "compas", "credit"]).set_index("id")
    assert one.loc["appd_llama_c_gt_b", "verdict"] == "not run"


def test_comparable_ratio_is_within_the_factor():
    v = {
        "id": "r",
        "quantity": "q",
        "measure": "ratio.c_over_b",
        "model": "m",
        "dataset": "pooled",
        "value": 5.7,
        "relation": "comparable",
        "factor": 2,
        "printed": "≈ 5.7×",
        "source": "s",
    }
    paper = {
        "paper": "P",
        "models": {"q": "Q"},
        "datasets": ["adult"],
        "values": [],
        "appendix_d": {"claim": "c", "models": {"m": "M"}, "values": [v]},
    }
    for c, b, verdict in ((57, 10, "match"), (29, 10, "match"), (28, 10, "differs"), (115, 10, "differs")):
        t2 = pd.DataFrame([{"model": "m", "dataset": "adult", "c": c, "b": b}])
        assert compare({"table2": t2}, paper, ["m"], ["adult"]).iloc[0]["verdict"] == verdict
