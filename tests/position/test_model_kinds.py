"""A model's kind (api or open-weight) can be declared for any model, bring-your-own names included,
is checked against the run's models, and is printed beside the quartile claim and in the report."""

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.helpers import REPO, base_config, deep_merge, run_snakemake, tiny_config
from tests.position.test_byo import always_right
from thinkbias.config import ConfigError, validate_config
from thinkbias.position.model_kinds import ModelKindError, model_kinds
from thinkbias.position.report import comparison_table, report_markdown

PAPER = yaml.safe_load((REPO / "resources/paper/position.yaml").read_text())
REGISTRY_BACKENDS = {"deepseek-r1-api": "openai", "r1-distill-qwen-7b": "llamacpp"}


def quartiles() -> pd.DataFrame:
    """Two reasoning-mode configurations: a bring-your-own DeepSeek-R1 whose first two quartiles
    are both 0.000 (the paper's API anchor, not strictly increasing) and an open-weight model with
    increasing quartile PBS."""
    pbs = {"deepseek-r1": [0.000, 0.000, 0.007, 0.071], "my-qwen-7b": [0.107, 0.151, 0.213, 0.385]}
    return pd.DataFrame(
        [
            {"benchmark": "mmlu", "model": m, "mode": "reasoning", "bin": i + 1, "pbs": v}
            for m, values in pbs.items()
            for i, v in enumerate(values)
        ]
    )


def test_kinds_come_from_the_declaration_then_the_registry():
    kinds = model_kinds(
        ["deepseek-r1", "my-qwen-7b", "deepseek-r1-api", "r1-distill-qwen-7b"],
        {"deepseek-r1": "api", "r1-distill-qwen-7b": "api"},
        REGISTRY_BACKENDS,
    ).set_index("model")
    assert kinds.to_dict("index") == {
        "deepseek-r1": {"kind": "api", "source": "position.model_kinds"},
        "deepseek-r1-api": {"kind": "api", "source": "registry (backend openai)"},
        "my-qwen-7b": {"kind": "open-weight", "source": "not declared (position.model_kinds)"},
        "r1-distill-qwen-7b": {"kind": "api", "source": "position.model_kinds"},
    }


def test_a_declaration_naming_no_model_of_the_run_names_the_key_and_the_models():
    with pytest.raises(
        ModelKindError,
        match=(
            r"^config key 'position.model_kinds': 1 model\(s\) not in this run: 'deepseek_r1' "
            r"\(models of the run: deepseek-r1, my-qwen-7b\)$"
        ),
    ):
        model_kinds(["deepseek-r1", "my-qwen-7b"], {"deepseek_r1": "api"}, REGISTRY_BACKENDS)
    with pytest.raises(ModelKindError, match=r"kinds other than api or open-weight: deepseek-r1: 'API'$"):
        model_kinds(["deepseek-r1"], {"deepseek-r1": "API"}, REGISTRY_BACKENDS)


def test_the_schema_checks_the_kinds():
    cfg = deep_merge(base_config(), {"position": {"model_kinds": {"deepseek-r1": "closed"}}})
    with pytest.raises(
        ConfigError, match=r"config key 'position.model_kinds.deepseek-r1' = 'closed': expected one of api, open-weight"
    ):
        validate_config(cfg, REPO / "config/schema/config.schema.yaml")
    cfg["position"]["model_kinds"] = {"deepseek-r1": "api"}
    assert validate_config(cfg, REPO / "config/schema/config.schema.yaml")["position"]["model_kinds"] == {
        "deepseek-r1": "api"
    }


def test_a_declared_api_model_leaves_the_quartile_claim_and_is_named_beside_it():
    tables = {"quartiles": quartiles()}
    models = ["deepseek-r1", "my-qwen-7b"]
    undeclared = comparison_table(PAPER, tables, model_kinds(models, {}, REGISTRY_BACKENDS)).set_index("id")
    row = undeclared.loc["quartile_monotonic"]
    assert (row["reproduced"], row["verdict"]) == (0.5, "differs")  # the API anchor counted as open-weight
    assert row["scope"] == (
        "this run: 1/2 open-weight configurations [open-weight: deepseek-r1 (not declared (position.model_kinds)), "
        "my-qwen-7b (not declared (position.model_kinds))]"
    )
    declared = model_kinds(models, {"deepseek-r1": "api"}, REGISTRY_BACKENDS)
    row = comparison_table(PAPER, tables, declared).set_index("id").loc["quartile_monotonic"]
    assert (row["reproduced"], row["verdict"]) == (1.0, "match")
    assert row["scope"] == (
        "this run: 1/1 open-weight configurations [API, left out: deepseek-r1 (position.model_kinds); "
        "open-weight: my-qwen-7b (not declared (position.model_kinds))]"
    )
    report = report_markdown(PAPER, tables, "note", declared)
    assert "## Model kinds" in report and "| deepseek-r1 | api | position.model_kinds |" in report


@pytest.mark.slow
def test_a_byo_run_declares_an_api_model_and_its_report_prints_it(workflow_dir):
    table = pd.concat([always_right(model="deepseek-r1"), always_right(model="my-qwen-7b")], ignore_index=True)
    path = workflow_dir / "external.csv"
    table.to_csv(path, index=False)
    position = {"byo_generations": str(path), "model_kinds": {"deepseek-r1": "api"}}
    run_snakemake(workflow_dir, ["--cores", "1", "position_report"], config=tiny_config(position=position), timeout=900)
    report = (workflow_dir / "results/position/report.md").read_text()
    assert "| deepseek-r1 | api | position.model_kinds |" in report
    assert "| my-qwen-7b | open-weight | not declared (position.model_kinds) |" in report
    assert "[API, left out: deepseek-r1 (position.model_kinds); open-weight: my-qwen-7b" in report
    # a misspelt name stops the report job, naming the key and the run's models
    override = json.dumps({"model_kinds": {"deepseek_r1": "api"}})
    proc = run_snakemake(
        workflow_dir,
        ["--cores", "1", "position_report", "--config", f"position={override}"],
        config=tiny_config(position=position),
        check=False,
        timeout=900,
    )
    message = (
        "config key 'position.model_kinds': 1 model(s) not in this run: 'deepseek_r1' "
        "(models of the run: deepseek-r1, my-qwen-7b)"
    )
    assert proc.returncode != 0 and message in proc.stderr
    assert message in Path(workflow_dir / "logs/position/report/report.log").read_text()
