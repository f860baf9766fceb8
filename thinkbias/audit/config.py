"""The audit overlay: an ``audit`` config section turned into the three studies' settings.

``audit_overlay`` derives, from the audited model's registry entry (its ``thinking`` control) and
the study sections' own keys, one setting per config key path, each with the reason it has that
value; ``apply_audit`` writes them into a copy of the config. The rules, documented in docs/audit.md:

- fairness needs both arms, so it runs only when the model has a think arm (``thinking`` native,
  prefill or prompt; a ``none`` model is skipped); models = [model], run = ``audit-<model>`` (outputs
  under results/fairness/audit-<model>/, so an audit never overwrites another run).
- position: a *reasoning model* (``thinking`` native or prefill: the model has its own think block)
  runs ``reasoning``; an *instruct model* (``prompt``: thinking only when asked, or ``none``) runs
  ``direct`` and ``cot``. ``audit.position_modes`` overrides; ``reasoning`` needs a think arm.
  Wilcoxon pairs compare reasoning with each other mode; truncation keeps the configured
  (mode, benchmark) pairs that the audit runs, on the audited model.
- blindspot: models = [model], tasks = ``fairness_<dataset>`` for each fairness dataset (or
  ``audit.blindspot_tasks``), generated concepts on (``hypothesis.enabled``) beside the curated
  ones, and every autorater role (hypothesis, dedup, variations, quality, verbalization) set to
  ``audit.autorater``, by default the audited model. The verbalization judge kind, the embedder and
  every size key stay as configured.

Applying the overlay twice gives the same config (the derivation reads nothing it writes), so the
report rule can list the settings from the config the rules see.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from thinkbias.config import config_error, show_value
from thinkbias.llm.registry import read_registry

AUDIT_STUDIES = ("fairness", "position", "blindspot")
REASONING_CONTROLS = ("native", "prefill")  # the model has its own think block
BLINDSPOT_ROLES = ("hypothesis", "dedup", "variations", "quality", "verbalization")


@dataclass(frozen=True)
class DerivedSetting:
    """One config key the audit sets: its path (``position.runs``), value and why."""

    key: str
    value: Any
    why: str


def model_kind(thinking: str) -> str:
    """``reasoning`` for a model with its own think block (native, prefill), else ``instruct``."""
    return "reasoning" if thinking in REASONING_CONTROLS else "instruct"


def default_position_modes(thinking: str) -> list[str]:
    """Position modes that fit a thinking control: reasoning for reasoning models, direct + cot else."""
    return ["reasoning"] if model_kind(thinking) == "reasoning" else ["direct", "cot"]


def audit_overlay(config: dict, registry: dict) -> list[DerivedSetting]:
    """The settings the ``audit`` section derives (empty while ``audit.model`` is null); raises ``ConfigError``
    naming the ``audit`` key when the model is not in ``registry`` or a mode needs a missing arm."""
    audit = config.get("audit") or {}
    model = audit.get("model")
    if not model:
        return []
    if model not in registry:
        raise config_error(
            [
                f"config key 'audit.model' = {model!r}: not a model of the registry "
                f"{config.get('registry')} (known: {', '.join(sorted(registry))})"
            ]
        )
    thinking = registry[model].get("thinking", "prefill")
    kind = f"{model_kind(thinking)} model (registry thinking: {thinking})"
    studies = audit["studies"]
    out: list[DerivedSetting] = []
    out += _fairness(config, model, thinking, studies)
    out += _position(config, audit, model, thinking, kind, studies)
    out += _blindspot(config, audit, model, studies)
    return out


def _fairness(config: dict, model: str, thinking: str, studies: list[str]) -> list[DerivedSetting]:
    if "fairness" not in studies:
        return [DerivedSetting("fairness.enabled", False, "not in audit.studies")]
    if thinking == "none":
        return [
            DerivedSetting(
                "fairness.enabled", False, "registry thinking: none, so the model has no think arm to compare"
            )
        ]
    return [
        DerivedSetting("fairness.enabled", True, f"in audit.studies; both arms (registry thinking: {thinking})"),
        DerivedSetting("fairness.models", [model], "the audited model"),
        DerivedSetting("fairness.run", f"audit-{model}", "outputs under results/fairness/audit-<model>/"),
        DerivedSetting("fairness.predictions", None, "the audit runs the model"),
    ]


def _position(
    config: dict, audit: dict, model: str, thinking: str, kind: str, studies: list[str]
) -> list[DerivedSetting]:
    if "position" not in studies:
        return [DerivedSetting("position.enabled", False, "not in audit.studies")]
    modes = audit["position_modes"]
    why = "audit.position_modes"
    if not modes:
        modes, why = (
            default_position_modes(thinking),
            f"{kind}: " + ("reasoning mode" if model_kind(thinking) == "reasoning" else "direct and CoT modes"),
        )
    if "reasoning" in modes and thinking == "none":
        raise config_error(
            [
                f"config key 'audit.position_modes' = {show_value(modes)}: reasoning needs a "
                f"think arm, and model {model!r} has registry thinking: none"
            ]
        )
    section = config["position"]
    pairs = (
        [{"reasoning": f"{model}/reasoning", "reference": f"{model}/{m}"} for m in modes if m != "reasoning"]
        if "reasoning" in modes
        else []
    )
    truncation: list[dict] = []
    for run in section["truncation"]["runs"]:
        item = {"model": model, "mode": run["mode"], "benchmark": run["benchmark"]}
        if run["mode"] in modes and run["benchmark"] in section["benchmarks"] and item not in truncation:
            truncation.append(item)
    return [
        DerivedSetting("position.enabled", True, "in audit.studies"),
        DerivedSetting("position.runs", [{"model": model, "mode": m} for m in modes], why),
        DerivedSetting("position.wilcoxon_pairs", pairs, "reasoning against each other audited mode"),
        DerivedSetting(
            "position.truncation.runs",
            truncation,
            "the configured truncation (mode, benchmark) pairs among the audited modes",
        ),
        DerivedSetting("position.byo_generations", None, "the audit runs the model"),
    ]


def _blindspot(config: dict, audit: dict, model: str, studies: list[str]) -> list[DerivedSetting]:
    if "blindspot" not in studies:
        return [DerivedSetting("blindspot.enabled", False, "not in audit.studies")]
    tasks, why = audit["blindspot_tasks"], "audit.blindspot_tasks"
    if not tasks:
        tasks = [f"fairness_{d}" for d in config["fairness"]["datasets"]]
        why = "the fairness tasks of fairness.datasets (the fairness study's profiles, Yes/No decision)"
    rater = audit["autorater"] or model
    rater_why = "audit.autorater" if audit["autorater"] else "audit.autorater is null: the audited model"
    out = [
        DerivedSetting("blindspot.enabled", True, "in audit.studies"),
        DerivedSetting("blindspot.models", [model], "the audited model"),
        DerivedSetting("blindspot.tasks", tasks, why),
        DerivedSetting("blindspot.hypothesis.enabled", True, "generated concepts beside the curated ones"),
        DerivedSetting("blindspot.byo.outcomes", None, "the audit runs the model"),
    ]
    if any(t.startswith("fairness_") for t in tasks):
        out.append(DerivedSetting("blindspot.rewrite.enabled", False, "the fairness tasks keep their profiles"))
    out += [DerivedSetting(f"blindspot.{role}.model", rater, rater_why) for role in BLINDSPOT_ROLES]
    return out


def set_key(config: dict, key: str, value: Any) -> None:
    """Set a dotted key path (``position.truncation.runs``) in ``config`` in place."""
    *parents, last = key.split(".")
    node = config
    for part in parents:
        node = node[part]
    node[last] = copy.deepcopy(value)


def apply_audit(config: dict, registry: dict) -> dict:
    """A copy of ``config`` with every setting of ``audit_overlay`` written in (unchanged while
    ``audit.model`` is null)."""
    out = copy.deepcopy(config)
    for setting in audit_overlay(config, registry):
        set_key(out, setting.key, setting.value)
    return out


def settings_rows(config: dict, registry: dict) -> list[dict]:
    """The derived settings as table rows (key, value, why), plus the kept keys the audit reads."""
    rows = [{"key": s.key, "value": show_value(s.value, 400), "why": s.why} for s in audit_overlay(config, registry)]
    if (config.get("audit") or {}).get("model"):
        bs = config["blindspot"]
        rows.append(
            {
                "key": "blindspot.verbalization.judge",
                "value": repr(bs["verbalization"]["judge"]),
                "why": "kept from the config",
            }
        )
        rows.append({"key": "blindspot.embedder", "value": repr(bs["embedder"]), "why": "kept from the config"})
    return rows


def audited_config(config: dict) -> dict:
    """``apply_audit`` with the registry the config names (read only when ``audit.model`` is set)."""
    if not (config.get("audit") or {}).get("model"):
        return config
    path = Path(config["registry"])
    if not path.is_file():
        raise config_error([f"config key 'registry' = {str(path)!r}: no such file (from {Path.cwd()})"])
    return apply_audit(config, read_registry(path))
