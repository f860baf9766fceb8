"""The execution profiles: what Snakemake reads from them, and the SLURM profile's per-rule list
staying in step with the workflow's model rules."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from snakemake.profiles import ProfileConfigFileParser

REPO = Path(__file__).resolve().parents[2]
PROFILES = REPO / "profiles"
MODEL_RULE = re.compile(r"generate|probe|respond")


def read_profile(name: str) -> dict:
    return yaml.safe_load((PROFILES / name / "config.yaml").read_text())


def snakemake_args(name: str) -> dict:
    """The command-line arguments Snakemake derives from a profile (its own parser)."""
    path = PROFILES / name / "config.yaml"
    with path.open() as stream:
        return dict(ProfileConfigFileParser().parse(stream))


def workflow_rule_names() -> set[str]:
    """Names of the rules declared with `rule <name>:` in rules/*.smk."""
    names = set()
    for smk in (REPO / "rules").glob("*.smk"):
        names |= set(re.findall(r"^rule\s+(\w+)\s*:", smk.read_text(), flags=re.M))
    return names


def test_workstation_profile_runs_locally_with_one_gpu():
    args = snakemake_args("workstation")
    assert "executor" not in args
    assert args["cores"] == "all"
    assert args["resources"] == ["gpu=1"]
    for flag in ("rerun-incomplete", "printshellcmds", "keep-going", "show-failed-logs"):
        assert args[flag] == "True", flag


def test_slurm_profile_submits_through_the_plugin():
    args = snakemake_args("slurm")
    assert args["executor"] == "slurm"
    assert int(args["jobs"]) >= 1
    assert 0 < int(args["slurm-init-seconds-before-status-checks"]) <= 15
    defaults = dict(item.split("=", 1) for item in args["default-resources"])
    assert {"slurm_partition", "slurm_account", "mem_mb", "runtime"} <= set(defaults)
    assert int(defaults["mem_mb"]) > 0 and int(defaults["runtime"]) > 0


def test_slurm_profile_requests_gpus_only_through_the_gpu_resource():
    """GPUs come from each rule's `resources: gpu=N` (sbatch --gpus=N), never from slurm_extra."""
    profile = read_profile("slurm")
    settings = yaml.safe_dump(profile)  # the settings, without the comments
    assert "slurm_extra" not in settings
    assert "--gres" not in settings and "--gpus" not in settings
    assert "gpu" not in profile.get("default-resources", {})
    assert "resources" not in profile  # no global cap on GPUs: SLURM schedules them


def test_model_rules_get_longer_runtime_and_more_memory():
    profile = read_profile("slurm")
    defaults = profile["default-resources"]
    per_rule = profile["set-resources"]
    assert per_rule, "no per-rule resources"
    for rule, res in per_rule.items():
        assert MODEL_RULE.search(rule), f"{rule} is not a model rule"
        assert res["runtime"] > defaults["runtime"], rule
        assert res["mem_mb"] > defaults["mem_mb"], rule


def test_every_model_rule_of_the_workflow_is_listed():
    rules = workflow_rule_names()
    model_rules = {r for r in rules if MODEL_RULE.search(r)}
    listed = set(read_profile("slurm")["set-resources"])
    missing = sorted(model_rules - listed)
    assert not missing, f"add to set-resources in profiles/slurm/config.yaml: {missing}"


def test_every_listed_rule_exists():
    rules = workflow_rule_names()
    if not any(MODEL_RULE.search(r) for r in rules):
        pytest.skip("the workflow declares no model rules yet")
    stale = sorted(set(read_profile("slurm")["set-resources"]) - rules)
    assert not stale, f"set-resources in profiles/slurm/config.yaml names unknown rules: {stale}"
