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


def read_profile(name: str) -> dict:
    return yaml.safe_load((PROFILES / name / "config.yaml").read_text())


def snakemake_args(name: str) -> dict:
    """The command-line arguments Snakemake derives from a profile (its own parser)."""
    path = PROFILES / name / "config.yaml"
    with path.open() as stream:
        return dict(ProfileConfigFileParser().parse(stream))


def workflow_rules() -> dict[str, str]:
    """Rule name -> its text, for the rules declared with `rule <name>:` in rules/*.smk."""
    rules = {}
    for smk in (REPO / "rules").glob("*.smk"):
        for block in re.split(r"^(?=rule \w+:)", smk.read_text(), flags=re.M):
            match = re.match(r"rule (\w+):", block)
            if match:
                rules[match.group(1)] = block
    return rules


def model_rules() -> set[str]:
    """Rules that call a model: they declare a `gpu=` resource (0 for API or CPU models)."""
    return {name for name, text in workflow_rules().items() if re.search(r"^\s+gpu=", text, flags=re.M)}


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
        assert res["runtime"] > defaults["runtime"], rule
        assert res["mem_mb"] > defaults["mem_mb"], rule


def test_every_model_rule_of_the_workflow_is_listed():
    missing = sorted(model_rules() - set(read_profile("slurm")["set-resources"]))
    assert not missing, f"add to set-resources in profiles/slurm/config.yaml: {missing}"


def test_every_listed_rule_is_a_model_rule():
    rules = model_rules()
    if not rules:
        pytest.skip("the workflow declares no model rules yet")
    stale = sorted(set(read_profile("slurm")["set-resources"]) - rules)
    assert not stale, f"set-resources in profiles/slurm/config.yaml names rules that are not model rules: {stale}"


def test_model_rule_detection_on_a_known_rule():
    rules = workflow_rules()
    assert "fetch" in rules and "fetch" not in model_rules()
    if "fairness_generate" in rules:
        assert "fairness_generate" in model_rules()


@pytest.mark.parametrize("name", ["workstation", "slurm"])
def test_snakemake_accepts_every_key_of_the_profile(name, monkeypatch):
    """Snakemake's own command-line parser reads the profile: a misspelt key is an error."""
    from snakemake.cli import parse_args

    monkeypatch.chdir(REPO)
    _, args = parse_args(["--profile", str(PROFILES / name), "--dry-run"])
    assert args.rerun_incomplete and args.keep_going and args.show_failed_logs and args.printshellcmds
    if name == "workstation":
        assert args.executor is None
        assert int(args.resources["gpu"].value) == 1
    else:
        assert args.executor == "slurm"
        assert args.slurm_init_seconds_before_status_checks == 10
        assert args.retries == 1
        assert set(args.set_resources) == set(read_profile("slurm")["set-resources"])
