"""`snakemake --report` builds after a run, with every registered product and its caption."""

import zipfile

import pytest
import yaml

from tests.fairness.test_byo import constructed_predictions
from tests.helpers import REPO, run_snakemake, tiny_config

pytestmark = pytest.mark.slow


def test_report_zip_holds_tables_figures_and_captions(workflow_dir):
    path = workflow_dir / "released.csv"
    constructed_predictions().to_csv(path, index=False)
    cfg = tiny_config(fairness={"run": "byo", "predictions": str(path), "bootstrap_samples": 50})
    run_snakemake(workflow_dir, ["--cores", "2"], config=cfg)  # the default target, as a user runs it
    run_snakemake(workflow_dir, ["--report", "results/report.zip"], config=cfg)
    with zipfile.ZipFile(workflow_dir / "results/report.zip") as archive:
        names = archive.namelist()
        html = "".join(archive.read(n).decode("utf-8", "replace") for n in names if n.endswith((".html", ".js")))
    for product in ("table2.csv", "table5.csv", "figure3.png", "report.md", "benchmarks.csv"):
        assert any(n.endswith(f"/{product}") for n in names), product
    caption = yaml.safe_load((REPO / "resources/captions/fairness.yaml").read_text())["tables/table2"]
    assert caption.split(".")[0] in html  # the caption of Table 2 is rendered
    assert "Undefined substitution" not in html and "System Message" not in html
