"""What a config refers to, checked before any DAG is built: every model id a study runs must be a
valid registry entry (its schema, e.g. a sha256 of 64 hex digits), able to run what the study asks
of it (a think arm for the fairness study and for position runs in ``reasoning`` mode), and every
position configuration a truncation run or a Wilcoxon pair names must be one of the generation runs.
Each problem is one ``config key '<path>' = <value>: ...`` line, so a typo is reported at the key
that holds it, not later as a missing file, a failed job or an unknown run.
"""

from __future__ import annotations

from pathlib import Path

from thinkbias.config import config_error, show_value
from thinkbias.llm.registry import read_registry, validate_entry


def blindspot_step_models(section: dict) -> dict[str, str]:
    """The registry id each model-run blindspot step uses, by its config section, "" when the step
    runs no model (switched off, or the keyword judge / tf-idf embedder)."""
    hypothesis = bool(section["hypothesis"]["enabled"])
    runs = {
        "rewrite": bool(section["rewrite"]["enabled"]),
        "hypothesis": hypothesis,
        "dedup": bool(section["dedup"]["enabled"]) and hypothesis,
        "variations": hypothesis,
        "quality": bool(section["quality"]["enabled"]),
        "verbalization": section["verbalization"]["judge"] == "autorater",
    }
    return {role: section[role]["model"] if on else "" for role, on in runs.items()}


def model_references(config: dict) -> list[tuple[str, str]]:
    """(key path, model id) of every registry model the enabled studies would run, in config order
    (studies fed with bring-your-own outputs run none)."""
    refs: list[tuple[str, str]] = []
    fair, pos, bs = config["fairness"], config["position"], config["blindspot"]
    if fair["enabled"] and not fair["predictions"]:
        refs += [(f"fairness.models[{i}]", m) for i, m in enumerate(fair["models"])]
    if pos["enabled"] and not pos["byo_generations"]:
        refs += [(f"position.runs[{i}].model", r["model"]) for i, r in enumerate(pos["runs"])]
        refs += [(f"position.truncation.runs[{i}].model", r["model"]) for i, r in enumerate(pos["truncation"]["runs"])]
    if bs["enabled"] and not bs["byo"]["outcomes"]:
        refs += [(f"blindspot.models[{i}]", m) for i, m in enumerate(bs["models"])]
        if bs["embedder"] != "tfidf":
            refs.append(("blindspot.embedder", bs["embedder"]))
        refs += [(f"blindspot.{role}.model", m) for role, m in blindspot_step_models(bs).items() if m]
    return refs


def position_run_errors(section: dict) -> list[str]:
    """Benchmarks, truncation runs and Wilcoxon pairs that name no configured generation run."""
    errors, benchmarks = [], list(section["benchmarks"])
    runs = set()
    for i, run in enumerate(section["runs"]):
        for j, bench in enumerate(run.get("benchmarks") or benchmarks):
            if bench not in benchmarks:
                errors.append(
                    f"config key 'position.runs[{i}].benchmarks[{j}]' = {bench!r}: not a configured "
                    f"benchmark (position.benchmarks: {', '.join(benchmarks)})"
                )
            runs.add((bench, run["model"], run["mode"]))
    listed = ", ".join(sorted({f"{m}/{mode}" for _, m, mode in runs}))
    for i, run in enumerate(section["truncation"]["runs"]):
        if (run["benchmark"], run["model"], run["mode"]) not in runs:
            errors.append(
                f"config key 'position.truncation.runs[{i}]' = {show_value(run)}: not one of "
                f"position.runs on {run['benchmark']} (runs: {listed})"
            )
    modes = {f"{m}/{mode}" for _, m, mode in runs}
    for i, pair in enumerate(section["wilcoxon_pairs"]):
        for side, ref in pair.items():
            if ref not in modes:
                errors.append(
                    f"config key 'position.wilcoxon_pairs[{i}].{side}' = {ref!r}: not one of "
                    f"position.runs as <model>/<mode> (runs: {listed})"
                )
    return errors


def entry_errors(refs: list[tuple[str, str]], registry: dict, registry_path: str | Path) -> tuple[list[str], dict]:
    """Each referenced registry entry validated once (at the first key naming it): one line per
    invalid entry, and the valid entries with their defaults filled, by model id."""
    errors, entries = [], {}
    for path, model in refs:
        if model in entries or model not in registry:
            continue
        try:
            entries[model] = validate_entry(model, registry[model])
        except ValueError as err:
            entries[model] = None
            errors.append(f"config key '{path}' = {model!r}: {registry_path}: {err}")
    return errors, {m: e for m, e in entries.items() if e is not None}


def think_arm_errors(config: dict, entries: dict, registry_path: str | Path) -> list[str]:
    """Models without a think arm (registry ``thinking: none``) where a study needs one: every model
    of the fairness study (it compares the think and nothink arms) and position runs in ``reasoning``
    mode. Models whose entry is missing or invalid are reported elsewhere."""

    def none(model: str) -> bool:
        return model in entries and entries[model]["thinking"] == "none"

    errors = []
    fair, pos = config["fairness"], config["position"]
    if fair["enabled"] and not fair["predictions"]:
        errors += [
            f"config key 'fairness.models[{i}]' = {m!r}: model {m!r} has thinking: none in {registry_path}, "
            f"but the fairness study runs every model in a think and a nothink arm"
            for i, m in enumerate(fair["models"])
            if none(m)
        ]
    if pos["enabled"] and not pos["byo_generations"]:
        errors += [
            f"config key 'position.runs[{i}].mode' = 'reasoning': model {run['model']!r} has thinking: none in "
            f"{registry_path}, so it has no think arm for mode 'reasoning' (use mode direct or cot, or a model "
            f"with thinking native, prefill or prompt)"
            for i, run in enumerate(pos["runs"])
            if run["mode"] == "reasoning" and none(run["model"])
        ]
    return errors


def reference_errors(config: dict, registry: dict, registry_path: str | Path) -> list[str]:
    """One line per model id missing from ``registry``, per referenced entry that breaks the
    registry schema, and per model without the think arm its study needs; when every id is known
    and valid, one line per dangling position run reference (a mistyped run model would otherwise
    repeat as those)."""
    known = ", ".join(sorted(registry))
    refs = model_references(config)
    errors = [
        f"config key '{path}' = {model!r}: not a model of the registry {registry_path} (known: {known})"
        for path, model in refs
        if model not in registry
    ]
    invalid, entries = entry_errors(refs, registry, registry_path)
    errors += invalid + think_arm_errors(config, entries, registry_path)
    pos = config["position"]
    if not errors and pos["enabled"] and not pos["byo_generations"]:
        errors += position_run_errors(pos)
    return errors


def check_references(config: dict) -> None:
    """Read the registry the config names and raise ``ConfigError`` listing every error of
    ``reference_errors`` (or naming the ``registry`` key when its file is missing or cannot be read:
    a duplicate or malformed id, a YAML error)."""
    path = Path(config["registry"])
    if not path.is_file():
        raise config_error([f"config key 'registry' = {str(path)!r}: no such file (from {Path.cwd()})"])
    try:
        registry = read_registry(path)
    except ValueError as err:
        raise config_error([f"config key 'registry' = {str(path)!r}: {err}"]) from None
    errors = reference_errors(config, registry, path)
    if errors:
        raise config_error(errors)
