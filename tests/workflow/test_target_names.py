"""Target names follow one scheme (README, "Running the workflow"): `<study>_<table|figure><n>`,
`<study>_report`, `<study>`, the few products the papers do not number, and the workflow's own."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.workflow.test_instruments import all_rows
from thinkbias.models.jobs import convert_rule, quantize_rule, weights_rule

REPO = Path(__file__).resolve().parents[2]
STUDIES = ("fairness", "position", "blindspot")
SCHEME = re.compile(rf"({'|'.join(STUDIES)})(_(table|figure)[1-9][0-9]*|_report)?")
# products the papers do not number, and the workflow's own targets (all listed in the README)
UNNUMBERED = {
    "fairness_appendix_c",
    "blindspot_flagged",
    "blindspot_funnel",
    "blindspot_costs",
    "blindspot_examples",
    "blindspot_concepts",
    "blindspot_rediscovery",
}
WORKFLOW = {"all", "audit", "plan", "benchmarks_table", "fetch_offline", "fetch_all"}


@pytest.fixture(scope="module")
def target_rules() -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "snakemake", "--list-target-rules"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    names = [line.strip() for line in proc.stdout.splitlines() if re.fullmatch(r"\s*\w+\s*", line)]
    assert "all" in names and "fairness_table2" in names, proc.stdout[-2000:]
    return names


def model_rules() -> set[str]:
    registry = yaml.safe_load((REPO / "config/models.yaml").read_text())
    return (
        {weights_rule(m) for m in registry} | {quantize_rule(m) for m in registry} | {convert_rule(m) for m in registry}
    )


def off_scheme(names: list[str]) -> list[str]:
    steps = {rule for row in all_rows() for rule in row.rules}
    return sorted(
        n
        for n in names
        if not SCHEME.fullmatch(n) and n not in UNNUMBERED | WORKFLOW and n not in steps and n not in model_rules()
    )


def test_scheme_accepts_study_products_and_refuses_aliases():
    assert off_scheme(["position_figure1", "fairness_table2", "blindspot", "fairness_report", "plan"]) == []
    assert off_scheme(["position_fig1", "fairness_report_target", "position_tab1", "fairness_figure"]) == [
        "fairness_report_target",
        "position_fig1",
        "position_tab1",
    ]


def test_every_target_rule_follows_the_scheme(target_rules: list[str]):
    assert off_scheme(target_rules) == []


def test_each_numbered_product_of_the_papers_has_its_target(target_rules: list[str]):
    expected = (
        [f"fairness_table{n}" for n in (2, 3, 4, 5)]
        + [f"fairness_figure{n}" for n in (2, 3, 4)]
        + [f"position_{kind}{n}" for kind in ("table", "figure") for n in (1, 2, 3, 4)]
    )
    assert sorted(set(expected) - set(target_rules)) == []


def test_the_readme_names_every_documented_exception():
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("## Running the workflow") : readme.index("### A full paper")]
    missing = sorted(n for n in UNNUMBERED | WORKFLOW if f"`{n}`" not in section)
    assert missing == []
    assert "`<study>_<table|figure><n>`" in section
