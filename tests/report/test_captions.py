"""Report caption files are current with the captions YAML and render the right caption per product."""

from pathlib import Path
from types import SimpleNamespace

import jinja2
import yaml

from tests.helpers import REPO
from thinkbias.report.captions import CAPTION_FILES, rst_text, write_caption_files


def test_committed_caption_files_are_current(tmp_path: Path):
    for path in write_caption_files(REPO / "resources/captions", tmp_path):
        committed = REPO / "report/captions" / path.relative_to(tmp_path)
        assert committed.read_text() == path.read_text(), (
            f"{committed} is stale: run python -m thinkbias.report.captions"
        )


def render(name: str, **wildcards: str) -> str:
    fake = SimpleNamespace(
        wildcards=SimpleNamespace(**wildcards),
        rule="r",
        config={"seed": 1, "fairness": {}, "position": {}, "blindspot": {}},
    )
    return jinja2.Template((REPO / "report/captions" / name).read_text()).render(snakemake=fake)


def test_wildcard_captions_pick_the_product():
    captions = yaml.safe_load((REPO / "resources/captions/fairness.yaml").read_text())
    text = render("fairness/table.rst", product="table2")
    assert rst_text(captions["tables/table2"]) in text
    assert rst_text(captions["tables/table3"]) not in text
    assert "Made by rule" in text


def test_every_caption_key_exists():
    for name, (study, key) in CAPTION_FILES.items():
        if "{" not in key:
            assert key in yaml.safe_load((REPO / f"resources/captions/{study}.yaml").read_text()), name
