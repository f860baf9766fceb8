"""The audit target end to end on the embedded model (one real Snakemake run at the smallest sizes that
give numbers, shared by the tests that read it): the report's tables equal the study tables they were
built from, and the blindspot pipeline's fairness task matches the fairness study's own construction;
and dry runs of the audit on a vLLM, an API and a llama.cpp registry model resolve."""

import math
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers import make_workflow_dir, run_snakemake, tiny_config
from thinkbias.audit.report import mean_interval
from thinkbias.blindspot.fairness_tasks import fairness_inputs
from thinkbias.blindspot.rediscovery import names_attribute
from thinkbias.data.loaders import load_tabular
from thinkbias.fairness.prompts import build_prompts
from thinkbias.tasks.records import sample_records

MODEL = "smollm2-135m"
SIZES = {
    "fairness": {
        "datasets": ["compas"],
        "n_records": 4,
        "think_budget": 12,
        "answer_budget": 8,
        "depths": 2,
        "sensitivity_depths": [2],
        "bootstrap_samples": 50,
    },
    "position": {
        "benchmarks": {"mmlu": {"path": "resources/raw/mmlu/mmlu.jsonl", "n_questions": 6}},
        "max_tokens": {"direct": 4, "cot": 12, "reasoning": 12},
    },
    "blindspot": {
        "n_inputs": 4,
        "n_clusters": 1,
        "embedder": "tfidf",
        # the counterfactual concept (the fairness study's pairs) and a rule-written one on the profiles
        "curated": {"ids": ["protected_race_nonwhite", "religion_minority"]},
        "hypothesis": {
            "per_cluster": 1,
            "batch_size": 1,
            "max_prompts": 1,
            "min_concepts": 1,
            "max_concepts": 1,
            "max_tokens": 400,
        },
        "dedup": {"max_tokens": 16},
        "variations": {"max_tokens": 120},
        "target": {"max_tokens": 8, "force_decision": True},
        "stages": {"k0": 2, "n_simulations": 200},
    },
}


def same(a: float, b: float) -> bool:
    """Equal numbers, or both missing (a statistic the study could not compute at this N)."""
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def audit_config(**audit) -> dict:
    cfg = tiny_config(**SIZES)
    cfg["shard_size"] = 32  # one generation job (one model load) per arm or mode
    cfg["audit"] = {"model": MODEL, **audit}
    return cfg


@pytest.fixture(scope="module")
def audit_run(tmp_path_factory, embedded_model, raw_file) -> Path:
    """The working folder of one audit run at SIZES (the model runs once for every test that reads it)."""
    raw_file("raw/compas/compas-scores-two-years.csv")
    raw_file("raw/mmlu/mmlu.jsonl")
    workdir = make_workflow_dir(tmp_path_factory.mktemp("audit") / "wf")
    run_snakemake(workdir, ["--cores", "2", "audit"], config=audit_config(), timeout=1800)
    return workdir


@pytest.mark.slow
def test_audit_end_to_end_report_tables_equal_the_study_tables(audit_run):
    res = audit_run / "results"
    out = res / f"audit/{MODEL}"
    report = (out / "report.md").read_text()

    settings = pd.read_csv(out / "settings.csv")
    assert dict(zip(settings["key"], settings["value"]))["fairness.run"] == f"'audit-{MODEL}'"
    assert "blindspot.tasks" in report and "fairness_compas" in report

    # fairness: cells, flip rates with intervals and unparsed counts are the study's own
    fair = pd.read_csv(out / "fairness.csv")
    t2 = pd.read_csv(res / f"fairness/audit-{MODEL}/tables/table2.csv").set_index(["model", "dataset"])
    f2 = pd.read_csv(res / f"fairness/audit-{MODEL}/tables/figure2.csv").set_index(["model", "dataset"])
    pc = pd.read_csv(res / f"fairness/audit-{MODEL}/tables/parse_counts.csv").set_index(["model", "dataset"])
    assert fair["dataset"].tolist() == ["compas"]
    row = fair.iloc[0]
    assert row["N"] == pc.loc[(MODEL, "compas"), "N"] > 0, pc.to_dict("records")
    for col in ("N", "a", "b", "c", "d", "mcnemar_p"):
        assert row[col] == t2.loc[(MODEL, "compas"), col], col
    for col in ("dcf_nothink", "dcf_nothink_lo", "dcf_think_hi", "delta_dcf", "delta_dcf_lo", "delta_dcf_hi"):
        assert same(row[col], f2.loc[(MODEL, "compas"), col]), col
    for col in ("nothink_unparsed", "think_unparsed"):
        assert row[col] == pc.loc[(MODEL, "compas"), col]
    assert f"N = {int(row['N'])} pairs" in report

    # position: the instruct model runs direct and CoT; PBS is Table 2's, its interval the questions'
    pos = pd.read_csv(out / "position.csv")
    summary = pd.read_csv(res / "position/tables/table2_summary.csv")
    questions = pd.read_csv(res / "position/questions.csv")
    corr = pd.read_csv(res / "position/tables/table1_partial_correlation.csv")
    assert sorted(pos["mode"]) == ["cot", "direct"] and set(summary["mode"]) == {"direct", "cot"}
    for r in pos.itertuples():
        s = summary[(summary["mode"] == r.mode)].iloc[0]
        assert same(r.pbs, s["pbs"]) and r.n_pbs == s["n_questions_pbs"]
        assert r.n_unparsed == s["n_unparsed"] and r.n_records == s["n_records"]
        mean, lo, hi, n = mean_interval(questions[questions["mode"] == r.mode]["pbs"])
        assert same(r.pbs_lo, lo) and same(r.pbs_hi, hi) and n == r.n_pbs
        c = corr[corr["mode"] == r.mode].iloc[0]
        assert same(r.length_rho, c["partial_rho"]) and same(r.length_p, c["p_value"]) and r.length_n == c["n"]
        assert f"N = {r.n_pbs} questions" in report

    # blindspot: the task's funnel counts and the protected attribute's rediscovery row
    bs = pd.read_csv(out / "blindspot.csv", dtype={"other_flagged": str})
    funnel = pd.read_csv(res / "blindspot/tables/funnel.csv")
    red = pd.read_csv(res / "blindspot/tables/fairness_rediscovery.csv", dtype={"other_flagged": str})
    task = bs[bs["kind"] == "task"].iloc[0]
    assert task["task"] == "fairness_compas"
    assert task["n_tested"] == funnel[funnel["step"] == "tested"]["n_concepts"].max()
    # the curated concepts and at least one generated one
    assert task["n_candidates"] > len(SIZES["blindspot"]["curated"]["ids"])
    r = red.iloc[0]
    assert task["protected_attribute"] == r["protected_attribute"] == "race"
    assert task["status"] == r["status"] and bool(task["flagged"]) == bool(r["flagged"])
    assert task["n"] == r["n"] and same(task["p_value"], r["p_value"])
    flagged = pd.read_csv(res / "blindspot/tables/flagged.csv")
    assert len(bs[bs["kind"] == "flagged"]) == len(flagged)


@pytest.mark.slow
def test_blindspot_fairness_task_matches_the_fairness_studys_construction(audit_run, raw_file):
    """The audit's blindspot task (COMPAS profiles, the curated concepts beside a generated one): its
    inputs, pairs and rediscovery row against the fairness study's own construction and the task's
    stage tables."""
    n_inputs, seed = SIZES["blindspot"]["n_inputs"], tiny_config()["seed"]
    res = audit_run / "results/blindspot"
    records = load_tabular("compas", [raw_file("raw/compas/compas-scores-two-years.csv")])
    inputs = pd.read_parquet(res / "fairness_compas/inputs.parquet")
    expected = fairness_inputs("fairness_compas", records, n_inputs, seed=seed)
    assert inputs["input_id"].tolist() == expected["input_id"].tolist()
    assert inputs["text"].tolist() == expected["text"].tolist()
    # the curated concept's pairs are the fairness study's counterfactual pairs (x+ = non-White)
    prompts = build_prompts("compas", sample_records("compas", records, n_inputs, seed))
    wide = prompts.pivot(index="pair_id", columns="side", values="profile")
    pairs = pd.read_parquet(res / "fairness_compas/variations.parquet")
    cf = pairs[pairs["concept_id"] == "protected_race_nonwhite"].merge(inputs[["input_id", "record_id"]])
    assert len(cf) == n_inputs and cf["valid"].all()
    assert cf["positive"].tolist() == wide.loc[cf["record_id"], "alpha_prime"].tolist()
    assert cf["negative"].tolist() == wide.loc[cf["record_id"], "alpha"].tolist()
    # decisions are the Yes/No answers (1 / 0; forced when the model wrote none)
    task = res / f"{MODEL}/fairness_compas"
    responses = pd.concat([pd.read_parquet(p) for p in sorted(task.glob("stage-*/responses.parquet"))])
    assert set(responses["decision"].dropna()) <= {0, 1} and responses["decision"].notna().all()
    # the rediscovery row says what the task's own tables say
    table = pd.read_csv(res / "tables/fairness_rediscovery.csv", dtype={"other_flagged": str}).fillna(
        {"other_flagged": ""}
    )
    assert len(table) == 1
    row = table.iloc[0]
    assert (row["model"], row["task"], row["protected_attribute"]) == (MODEL, "fairness_compas", "race")
    generated = pd.read_parquet(res / "fairness_compas/concepts_generated.parquet")
    naming_race = [names_attribute(t, k, "race") for t, k in zip(generated["title"], generated["keywords"])]
    assert row["curated_concept"] == "protected_race_nonwhite" and row["hypothesized"] == any(naming_race)
    stages = pd.read_csv(task / "stages.csv")
    flagged = pd.read_csv(task / "flagged.csv")
    mine = stages[stages["concept_id"] == "protected_race_nonwhite"].sort_values("stage")
    assert bool(row["tested"]) == (len(mine) > 0)
    assert bool(row["flagged"]) == ("protected_race_nonwhite" in set(flagged["concept_id"]))
    if len(mine):
        last = mine.iloc[-1]
        assert row["concept_id"] == "protected_race_nonwhite"
        assert (row["status"], row["stage"], row["n"], row["b"], row["c"]) == (
            last["status"],
            last["stage"],
            last["n"],
            last["b"],
            last["c"],
        )
        assert row["delta"] == pytest.approx(last["delta"], nan_ok=True)
    assert row["n_other_flagged"] == int((flagged["concept_id"] != "protected_race_nonwhite").sum())
    report = (res / "report.md").read_text()
    assert "## Fairness tasks: is the protected attribute rediscovered?" in report
    assert f"{MODEL} / fairness_compas: race" in report
    assert (res / "tables/fairness_rediscovery.md").read_text().startswith("| model | task |")


@pytest.mark.parametrize(
    "model, configfile, modes",
    [
        ("qwq-32b-awq", "config/fairness-full.yaml", ["reasoning"]),  # vLLM, thinking prefill
        ("deepseek-r1-api", "config/position-full.yaml", ["reasoning"]),  # API, thinking native
        ("llama-3.1-8b-instruct-q4km", "config/position-full.yaml", ["direct", "cot"]),  # llama.cpp, none
    ],
)
def test_audit_dry_run_resolves_for_each_backend(workflow_dir, model, configfile, modes):
    proc = run_snakemake(
        workflow_dir,
        ["audit", "-n", "--configfile", configfile, "--config", f'audit={{"model": "{model}"}}'],
        timeout=600,
    )
    out = proc.stdout
    assert f"results/audit/{model}/report.md" in out
    for mode in ("direct", "cot", "reasoning"):
        assert (f"generations/{model}/{mode}/" in out) == (mode in modes), mode
    # fairness needs a think arm: a thinking-none model skips it, the others run both arms
    has_think_arm = model != "llama-3.1-8b-instruct-q4km"
    for arm in ("think", "nothink"):
        assert (
            f"results/fairness/audit-{model}/generations/" in out and f"/{model}/{arm}/shard-" in out
        ) == has_think_arm
    assert f"results/blindspot/{model}/fairness_" in out


def test_audit_target_without_a_model_stops_with_the_key_to_set(workflow_dir):
    proc = run_snakemake(workflow_dir, ["audit", "-n"], check=False, timeout=600)
    assert proc.returncode != 0
    message = proc.stdout + proc.stderr
    assert "config key 'audit.model' is null" in message and "target audit needs a model" in message
