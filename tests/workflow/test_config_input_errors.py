"""What a user writes by hand is checked before anything runs: a key or a registry id given twice, an
empty list a study would work through, a model id that cannot name a file, an API base URL without
http(s), each stops the config check naming the file or the key (real files, real dry runs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.helpers import REPO, base_config, deep_merge, dry_run_jobs, run_snakemake
from thinkbias.config import ConfigError, validate_config
from thinkbias.config_refs import check_references, reference_errors
from thinkbias.llm.registry import read_registry, validate_entry

SCHEMA = REPO / "config/schema/config.schema.yaml"
REGISTRY_TEXT = (REPO / "config/models.yaml").read_text()
# a position run in one mode, then a second `position:` section that would silently replace it
DUPLICATE_SECTION = """position:
  runs:
    - {model: smollm2-135m, mode: cot}
fairness:
  enabled: false
blindspot:
  enabled: false
position:
  enabled: true
"""


def filled(override: dict) -> dict:
    return validate_config(deep_merge(base_config(), override), SCHEMA)


def registry_with(folder: Path, text: str) -> Path:
    """The project's registry with ``text`` appended, written to ``folder``."""
    path = folder / "models.yaml"
    path.write_text(REGISTRY_TEXT + "\n" + text)
    return path


def api_entry(model_id: str, api_base: str = "https://api.example.com/v1", thinking: str = "native") -> str:
    return (
        f"{model_id}:\n  backend: openai\n  api_base: {api_base}\n  api_model: m\n"
        f"  api_key_env: EXAMPLE_KEY\n  thinking: {thinking}\n"
    )


def error_text(config: dict) -> str:
    with pytest.raises(ConfigError) as err:
        check_references(config)
    return str(err.value)


# ------------------------------------------------------------------ the config check, in-process


@pytest.mark.parametrize(
    "override, line",
    [
        ({"position": {"runs": []}}, "config key 'position.runs' = []: expected at least this many items: 1"),
        ({"blindspot": {"models": []}}, "config key 'blindspot.models' = []: expected at least this many items: 1"),
        ({"blindspot": {"tasks": []}}, "config key 'blindspot.tasks' = []: expected at least this many items: 1"),
        (
            {"position": {"runs": [{"model": "smollm2-135m", "mode": "cot", "benchmarks": []}]}},
            "config key 'position.runs[0].benchmarks' = []: expected at least this many items: 1",
        ),
        ({"position": {"bins": []}}, "config key 'position.bins' = []: expected at least this many items: 1"),
    ],
)
def test_an_empty_list_a_study_works_through_is_named(override, line):
    with pytest.raises(ConfigError) as err:
        filled(override)
    assert line in str(err.value).splitlines()[1], str(err.value)


def test_a_registry_id_given_twice_is_named_with_its_line(tmp_path):
    path = registry_with(tmp_path, api_entry("smollm2-135m", thinking="sometimes"))
    line = REGISTRY_TEXT.count("\n") + 2
    first = REGISTRY_TEXT.splitlines().index("smollm2-135m:") + 1
    with pytest.raises(ValueError) as err:
        read_registry(path)
    assert str(err.value) == f"{path}, line {line}: duplicate key 'smollm2-135m' (first given on line {first})"
    message = error_text(filled({"registry": str(path)}))
    assert f"config key 'registry' = '{path}': {path}, line {line}: duplicate key 'smollm2-135m'" in message
    assert "thinking" not in message


def test_a_registry_id_that_cannot_name_a_file_is_named(tmp_path):
    path = registry_with(tmp_path, api_entry("org/model"))
    with pytest.raises(ValueError, match=r"model id 'org/model': expected text matching \^\[A-Za-z0-9\]"):
        read_registry(path)
    message = error_text(filled({"registry": str(path), "fairness": {"models": ["org/model"]}}))
    assert f"config key 'registry' = '{path}': {path}: model id 'org/model'" in message


def test_every_registry_id_of_the_project_is_a_valid_id():
    assert read_registry(REPO / "config/models.yaml")["qwen3-32b-awq"]["backend"] == "vllm"


@pytest.mark.parametrize("api_base", ["htp://api.example.com/v1", "api.example.com/v1", "https://", "http:/x"])
def test_an_api_base_without_http_or_https_is_named_at_the_config_check(tmp_path, api_base):
    path = registry_with(tmp_path, api_entry("example-api", api_base))
    config = filled({"registry": str(path), "fairness": {"models": ["example-api"]}})
    errors = reference_errors(config, read_registry(path), path)
    assert errors == [
        f"config key 'fairness.models[0]' = 'example-api': {path}: model 'example-api' (openai backend): "
        f"invalid registry entry: registry key 'api_base' = {api_base!r}: expected an http:// or https:// URL "
        "with a host, e.g. https://api.openai.com/v1"
    ]
    for good in (
        "",
        "http://127.0.0.1:8080/v1",
        "https://api.deepseek.com",
        "http://[::1]:8000/v1",
        "HTTPS://Api.Example.com",
    ):
        entry = yaml.safe_load(api_entry("example-api", json.dumps(good)))["example-api"]
        assert validate_entry("example-api", entry)["api_base"] == good


# ------------------------------------------------------------------ real dry runs: stopped before any job


def stopped_before_any_job(proc) -> str:
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    assert "Building DAG" not in out and not dry_run_jobs(out), out[-3000:]
    return out


@pytest.mark.slow
def test_dry_run_stops_on_a_key_given_twice_in_a_configfile(workflow_dir):
    path = workflow_dir / "mine.yaml"
    path.write_text(DUPLICATE_SECTION)
    out = stopped_before_any_job(run_snakemake(workflow_dir, ["-n", "--configfile", str(path)], check=False))
    assert f"{path}, line 8: duplicate key 'position' (first given on line 1)" in out


@pytest.mark.slow
@pytest.mark.parametrize(
    "section, key",
    [({"position": {"runs": []}}, "position.runs"), ({"blindspot": {"models": []}}, "blindspot.models")],
)
def test_dry_run_stops_on_an_empty_list(workflow_dir, section, key):
    args = ["-n", "--config", *(f"{k}={json.dumps(v)}" for k, v in section.items())]
    out = stopped_before_any_job(run_snakemake(workflow_dir, args, check=False))
    assert f"config key '{key}' = []: expected at least this many items: 1" in out


@pytest.mark.slow
def test_dry_run_stops_on_a_registry_id_with_a_slash(workflow_dir):
    path = registry_with(workflow_dir, api_entry("org/model"))
    args = ["-n", "--config", f"registry={path}", 'fairness={"models": ["org/model"]}']
    out = stopped_before_any_job(run_snakemake(workflow_dir, args, check=False))
    assert "model id 'org/model': expected text matching" in out and str(path) in out
    assert "MissingInputException" not in out


def test_the_schema_states_the_id_pattern_the_registry_checks():
    from thinkbias.llm.registry import MODEL_ID_PATTERN

    description = yaml.safe_load((REPO / "config/schema/models.schema.yaml").read_text())["description"]
    assert f"(^{MODEL_ID_PATTERN}$)" in description
