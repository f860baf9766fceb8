"""Run planner: what a config will ask of its models, before anything is generated.

Per (study, model, arm/mode) it counts requests, expected prompt and generated tokens, probe
forward passes, and GPU-hours at a throughput the user sets per model. Generated tokens come from the
config's budgets (an upper bound: every request runs to its budget) unless the persistent cache
already holds answers of that model, in which case their measured mean replaces the budget.

Before any of that, each local model's weights are prepared by one job: a download (``weights_<id>``
or the manifest's ``fetch``) or a GPU quantization (``quantize_<id>``, after its source's download);
``preparation_table`` lists those jobs with their size and hours.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from thinkbias.models.jobs import prepared_models, quantize_rule, weights_rule
from thinkbias.position.items import n_orderings
from thinkbias.report.markdown import markdown_table

PLAN_COLUMNS = ["study", "model", "backend", "arm_or_mode", "requests", "prompt_tokens", "generated_tokens",
                "token_source", "probe_passes", "hours", "gpu_hours"]
PREPARATION_COLUMNS = ["model", "job", "size_gb", "gpus", "hours", "gpu_hours"]


@dataclass(frozen=True)
class Throughput:
    """Tokens per second one job of a model sustains (generation; prompt prefill is counted at
    ``prefill_ratio`` times that speed, and each probe pass as ``probe_tokens`` prefill tokens)."""

    generated_per_s: float
    prefill_ratio: float = 10.0
    probe_tokens: int = 16


def measured_mean_tokens(cache_dir: Path, model_id: str) -> float | None:
    """Mean completion tokens of the generations cached for a model, or None without a cache."""
    path = cache_dir / f"{model_id}.sqlite"
    if not path.exists():
        return None
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
            values = [json.loads(v).get("completion_tokens") for (v,) in
                      conn.execute("SELECT value FROM entries WHERE kind = 'gen'")]
    except sqlite3.Error:
        return None
    values = [v for v in values if isinstance(v, (int, float))]
    return sum(values) / len(values) if values else None


def fairness_rows(section: dict) -> list[dict]:
    """Both sides x both arms per record, and CDPG probes at the union of the depth grids."""
    depths = sorted({section["depths"], *section.get("sensitivity_depths", [])})
    fractions = {round(k / K, 9) for K in depths for k in range(K + 1)}
    rows = []
    for model in section["models"]:
        pairs = section["n_records"] * len(section["datasets"])
        rows.append(dict(study="fairness", model=model, arm_or_mode="think", requests=2 * pairs,
                         budget=section["think_budget"] + section["answer_budget"], probe_passes=2 * pairs * len(fractions)))
        rows.append(dict(study="fairness", model=model, arm_or_mode="nothink", requests=2 * pairs,
                         budget=section["answer_budget"], probe_passes=2 * pairs))
    return rows


def position_rows(section: dict) -> list[dict]:
    """One request per question and option ordering (4 cyclic shifts, or 24 with ``orderings: all``)
    per run; truncation continuations at four offsets."""
    per_question = n_orderings(section.get("orderings", "cyclic"))
    rows = []
    n_questions = sum(b["n_questions"] for b in section["benchmarks"].values())
    for run in section["runs"]:
        benchmarks = run.get("benchmarks") or list(section["benchmarks"])
        n = sum(run.get("n_questions") or section["benchmarks"][b]["n_questions"] for b in benchmarks)
        rows.append(dict(study="position", model=run["model"], arm_or_mode=run["mode"], requests=per_question * n,
                         budget=section["max_tokens"][run["mode"]], probe_passes=0))
    trunc = section.get("truncation", {})
    for run in trunc.get("runs", []):
        n = min(trunc["n_questions"], n_questions)
        rows.append(dict(study="position", model=run["model"], arm_or_mode=f"{run['mode']}-truncation",
                         requests=n * len(trunc.get("offsets", [-0.15, -0.05, 0.05, 0.15])) * trunc["n_continuations"],
                         budget=trunc["max_tokens"], probe_passes=0))
    return rows


def blindspot_rows(section: dict) -> list[dict]:
    """Upper bound without early stopping: baseline responses plus both sides of every concept on
    every input of the last stage; the staged procedure needs fewer (see the cost table)."""
    rows = []
    concepts = max(len(section["curated"]["ids"]),
                   section["hypothesis"]["min_concepts"] if section["hypothesis"]["enabled"] else 0)
    for task in section["tasks"]:
        n_inputs = section["n_inputs_by_task"].get(task) or section["n_inputs"]
        for model in section["models"]:
            rows.append(dict(study="blindspot", model=model, arm_or_mode=f"{task}-baseline", requests=n_inputs,
                             budget=section["target"]["max_tokens"], probe_passes=0))
            rows.append(dict(study="blindspot", model=model, arm_or_mode=f"{task}-variations",
                             requests=2 * concepts * n_inputs, budget=section["target"]["max_tokens"], probe_passes=0))
    return rows


STUDY_ROWS = {"fairness": fairness_rows, "position": position_rows, "blindspot": blindspot_rows}


def plan_table(config: dict, registry: dict, prompt_tokens: dict[str, int], throughput: dict[str, Throughput],
               cache_dir: Path | None = None) -> pd.DataFrame:
    """The plan of every enabled study (see the module docstring for how each column is estimated)."""
    rows = []
    for study, make_rows in STUDY_ROWS.items():
        if not config.get(study, {}).get("enabled"):
            continue
        for row in make_rows(config[study]):
            model = row["model"]
            measured = measured_mean_tokens(cache_dir, model) if cache_dir else None
            per_request = measured if measured is not None else row.pop("budget")
            row.pop("budget", None)
            backend = registry[model]["backend"]
            speed = throughput[model]
            prompt = row["requests"] * prompt_tokens[study]
            generated = row["requests"] * per_request
            seconds = (generated + prompt / speed.prefill_ratio
                       + row["probe_passes"] * speed.probe_tokens / speed.prefill_ratio) / speed.generated_per_s
            gpus = registry[model].get("gpus", 0) if backend != "openai" else 0
            rows.append({**row, "backend": backend, "prompt_tokens": int(prompt), "generated_tokens": int(generated),
                         "token_source": "measured" if measured is not None else "budget",
                         "hours": round(seconds / 3600, 2), "gpu_hours": round(seconds / 3600 * max(gpus, 0), 2)})
    return pd.DataFrame(rows, columns=PLAN_COLUMNS)


def plan_markdown(table: pd.DataFrame, paper_probe_passes: int | None = None) -> str:
    """The plan as Markdown with totals; compares probe passes with the paper's stated count."""
    totals = (f"Totals: {int(table['requests'].sum()):,} requests, {int(table['generated_tokens'].sum()):,} generated "
              f"tokens, {int(table['probe_passes'].sum()):,} probe passes, {table['hours'].sum():.1f} job-hours, "
              f"{table['gpu_hours'].sum():.1f} GPU-hours.")
    lines = ["# Run plan", "", markdown_table(table), totals]
    fair = int(table.loc[table["study"] == "fairness", "probe_passes"].sum())
    if paper_probe_passes and fair:
        lines += ["", f"Fairness probe passes: {fair:,} here vs {paper_probe_passes:,} stated by the paper "
                      "(the paper counts 10 depths per side; this plan probes the union of every depth grid "
                      "in the config, including depth 0, and one nothink read per side)."]
    return "\n".join(lines) + "\n"


def preparation_table(config: dict, registry: dict, manifest_models: set[str], download_mb_per_s: float,
                      quantize_hours: float) -> pd.DataFrame:
    """One row per job that prepares a local model's weights: the manifest's ``fetch``, a pinned
    download ``weights_<id>`` (hours at ``download_mb_per_s``) or ``quantize_<id>`` on its GPUs
    (``quantize_hours`` each; the source's download is its own row)."""
    rows = []
    studies = {s: config[s] for s in STUDY_ROWS if config.get(s, {}).get("enabled")}
    for model in prepared_models(studies, registry):
        entry = registry[model]
        if "quantize" in entry:
            gpus = max(1, int(entry.get("gpus", 1)))
            rows.append({"model": model, "job": quantize_rule(model), "size_gb": None, "gpus": gpus,
                         "hours": quantize_hours, "gpu_hours": quantize_hours * gpus})
            continue
        size = entry.get("size_gb")
        job = "fetch" if model in manifest_models else weights_rule(model)
        hours = round(size * 1000 / download_mb_per_s / 3600, 2) if size is not None else None
        rows.append({"model": model, "job": job, "size_gb": size, "gpus": 0, "hours": hours, "gpu_hours": 0.0})
    return pd.DataFrame(rows, columns=PREPARATION_COLUMNS)


def preparation_markdown(table: pd.DataFrame) -> str:
    """The model-preparation section of the plan, with its totals."""
    if table.empty:
        return "## Model preparation\n\nNo local model weights to prepare.\n"
    downloads = table[table["gpus"] == 0]
    return "\n".join([
        "## Model preparation", "", markdown_table(table),
        f"Downloads: {len(downloads)} ({downloads['size_gb'].sum():.1f} GB); quantizations: "
        f"{int((table['gpus'] > 0).sum())} ({table['gpu_hours'].sum():.1f} GPU-hours).", ""])
