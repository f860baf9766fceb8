"""The audit overlay: which studies, arms, modes, tasks and roles an audit section derives."""

import pytest

from thinkbias.audit.config import apply_audit, audit_overlay, default_position_modes, settings_rows
from thinkbias.config import ConfigError, load_config, validate_config
from thinkbias.llm.registry import read_registry

REGISTRY = read_registry("config/models.yaml")
SCHEMA = "config/schema/config.schema.yaml"


def with_audit(**audit) -> dict:
    cfg = load_config("config/config.yaml")
    cfg["audit"] = audit
    return validate_config(cfg, SCHEMA)


def test_the_embedded_default_has_no_audit_and_the_overlay_changes_nothing():
    cfg = load_config("config/config.yaml")
    assert cfg["audit"]["model"] is None and audit_overlay(cfg, REGISTRY) == [] and apply_audit(cfg, REGISTRY) == cfg


def test_audit_defaults_are_filled():
    audit = with_audit(model="smollm2-135m")["audit"]
    assert audit == {
        "model": "smollm2-135m",
        "studies": ["fairness", "position", "blindspot"],
        "position_modes": None,
        "blindspot_tasks": None,
        "autorater": None,
    }


def test_audit_section_with_unknown_key_or_wrong_type_is_refused():
    cfg = load_config("config/config.yaml")
    with pytest.raises(ConfigError, match=r"'audit.studies\[0\]' = 'fairnes': expected one of"):
        validate_config({**cfg, "audit": {"model": "smollm2-135m", "studies": ["fairnes"]}}, SCHEMA)
    with pytest.raises(ConfigError, match=r"'audit.modes'.*unknown key"):
        validate_config({**cfg, "audit": {"model": "smollm2-135m", "modes": ["cot"]}}, SCHEMA)


@pytest.mark.parametrize(
    "thinking, modes",
    [("native", ["reasoning"]), ("prefill", ["reasoning"]), ("prompt", ["direct", "cot"]), ("none", ["direct", "cot"])],
)
def test_position_modes_follow_the_thinking_control(thinking, modes):
    assert default_position_modes(thinking) == modes


def test_embedded_model_overlay():
    cfg = apply_audit(with_audit(model="smollm2-135m"), REGISTRY)
    fair, pos, bs = cfg["fairness"], cfg["position"], cfg["blindspot"]
    assert fair["enabled"] and fair["models"] == ["smollm2-135m"] and fair["run"] == "audit-smollm2-135m"
    assert fair["datasets"] == ["adult", "compas"] and fair["n_records"] == 16  # sizes stay the config's
    assert pos["runs"] == [{"model": "smollm2-135m", "mode": "direct"}, {"model": "smollm2-135m", "mode": "cot"}]
    assert pos["wilcoxon_pairs"] == [] and pos["truncation"]["runs"] == []  # no reasoning run
    assert bs["models"] == ["smollm2-135m"] and bs["tasks"] == ["fairness_adult", "fairness_compas"]
    assert bs["hypothesis"]["enabled"] and not bs["rewrite"]["enabled"]
    for role in ("hypothesis", "dedup", "variations", "quality", "verbalization"):
        assert bs[role]["model"] == "smollm2-135m"
    assert bs["verbalization"]["judge"] == "keywords" and bs["n_inputs"] == 16


def test_reasoning_model_runs_reasoning_with_truncation_and_an_autorater_override():
    cfg = apply_audit(with_audit(model="r1-distill-qwen-7b-q4km", autorater="gpt-5-mini-api"), REGISTRY)
    pos, bs = cfg["position"], cfg["blindspot"]
    assert pos["runs"] == [{"model": "r1-distill-qwen-7b-q4km", "mode": "reasoning"}]
    assert pos["truncation"]["runs"] == [{"model": "r1-distill-qwen-7b-q4km", "mode": "reasoning", "benchmark": "mmlu"}]
    assert bs["verbalization"]["model"] == bs["hypothesis"]["model"] == "gpt-5-mini-api"
    assert bs["models"] == ["r1-distill-qwen-7b-q4km"]


def test_mode_override_pairs_reasoning_with_each_other_mode():
    cfg = apply_audit(with_audit(model="qwq-32b-awq", position_modes=["direct", "reasoning"]), REGISTRY)
    assert cfg["position"]["wilcoxon_pairs"] == [
        {"reasoning": "qwq-32b-awq/reasoning", "reference": "qwq-32b-awq/direct"}
    ]


def test_model_without_think_arm_skips_fairness_and_refuses_reasoning():
    cfg = apply_audit(with_audit(model="llama-3.1-8b-instruct-q4km"), REGISTRY)
    assert not cfg["fairness"]["enabled"] and cfg["position"]["enabled"]
    rows = {r["key"]: r for r in settings_rows(cfg, REGISTRY)}
    assert "thinking: none" in rows["fairness.enabled"]["why"]
    with pytest.raises(ConfigError, match=r"'audit.position_modes'.*thinking: none"):
        audit_overlay(with_audit(model="llama-3.1-8b-instruct-q4km", position_modes=["reasoning"]), REGISTRY)


def test_studies_and_tasks_overrides():
    cfg = apply_audit(with_audit(model="smollm2-135m", studies=["blindspot"], blindspot_tasks=["loan"]), REGISTRY)
    assert not cfg["fairness"]["enabled"] and not cfg["position"]["enabled"]
    assert cfg["blindspot"]["tasks"] == ["loan"]


def test_unknown_model_names_the_audit_key():
    with pytest.raises(ConfigError, match=r"config key 'audit.model' = 'no-such-model': not a model of the registry"):
        audit_overlay(with_audit(model="no-such-model"), REGISTRY)


def test_overlay_is_idempotent_so_the_report_lists_what_the_rules_ran():
    cfg = with_audit(model="qwq-32b-awq")
    once = apply_audit(cfg, REGISTRY)
    assert apply_audit(once, REGISTRY) == once
    assert settings_rows(once, REGISTRY) == settings_rows(cfg, REGISTRY)
