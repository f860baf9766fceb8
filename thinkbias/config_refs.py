"""What a config refers to, checked before any DAG is built: every model id a study runs must be a
registry entry, and every position configuration a truncation run or a Wilcoxon pair names must be
one of the generation runs. Each problem is one ``config key '<path>' = <value>: ...`` line, so a
typo is reported at the key that holds it, not later as a missing file or an unknown run.
"""

from __future__ import annotations

from pathlib import Path

from thinkbias.config import config_error, show_value
from thinkbias.llm.registry import read_registry


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


def reference_errors(config: dict, registry: dict, registry_path: str | Path) -> list[str]:
    """One line per model id missing from ``registry``; when every id is known, one line per
    dangling position run reference (a mistyped run model would otherwise repeat as those)."""
    known = ", ".join(sorted(registry))
    errors = [
        f"config key '{path}' = {model!r}: not a model of the registry {registry_path} (known: {known})"
        for path, model in model_references(config)
        if model not in registry
    ]
    pos = config["position"]
    if not errors and pos["enabled"] and not pos["byo_generations"]:
        errors += position_run_errors(pos)
    return errors


def check_references(config: dict) -> None:
    """Read the registry the config names and raise ``ConfigError`` listing every error of
    ``reference_errors`` (or naming the ``registry`` key when its file is missing)."""
    path = Path(config["registry"])
    if not path.is_file():
        raise config_error([f"config key 'registry' = {str(path)!r}: no such file (from {Path.cwd()})"])
    errors = reference_errors(config, read_registry(path), path)
    if errors:
        raise config_error(errors)
