"""Helpers for tests that run the real workflow: isolated working folders, Snakemake runs, configs."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
EMBEDDED_MODEL = REPO / "resources/models/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf"
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
# Entries of the repository a workflow folder links to (outputs, cache and logs stay in the folder).
LINKED = ("Snakefile", "rules", "scripts", "envs", "config", "profiles", "report")


def deep_merge(base: dict, override: dict) -> dict:
    """Recursively merge ``override`` into a copy of ``base`` (dicts merge, other values replace)."""
    out = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def make_workflow_dir(path: Path) -> Path:
    """Lay out a working folder that runs the repository's workflow with its own results and cache.

    Raw data and model weights are shared with the repository (linked), so they are fetched once.
    """
    path.mkdir(parents=True, exist_ok=True)
    for name in LINKED:
        if (REPO / name).exists() and not (path / name).exists():
            (path / name).symlink_to(REPO / name)
    res = path / "resources"
    res.mkdir(exist_ok=True)
    for entry in (REPO / "resources").iterdir():
        if entry.name in ("raw", "models"):
            continue
        if not (res / entry.name).exists():
            (res / entry.name).symlink_to(entry)
    for shared in ("raw", "models"):
        (REPO / "resources" / shared).mkdir(parents=True, exist_ok=True)
        if not (res / shared).exists():
            (res / shared).symlink_to(REPO / "resources" / shared)
    return path


def run_snakemake(
    workdir: Path, args: list[str], config: dict | None = None, timeout: float = 1200, check: bool = True
) -> subprocess.CompletedProcess:
    """Run ``snakemake`` in ``workdir`` (made by ``make_workflow_dir``) with an optional config
    written to workdir/test-config.yaml. Output is captured; on failure it is shown in the error."""
    cmd = SNAKEMAKE + ["--directory", str(workdir), "--snakefile", str(workdir / "Snakefile")]
    if config is not None:
        cfg = workdir / "test-config.yaml"
        cfg.write_text(yaml.safe_dump(config, sort_keys=False))
        cmd += ["--configfile", str(cfg)]
    env = {**os.environ, "THINKBIAS_OFFLINE": "1", "THINKBIAS_THREADS": "1", "PYTHONPATH": str(REPO)}
    proc = subprocess.run(cmd + args, cwd=workdir, capture_output=True, text=True, timeout=timeout, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"snakemake {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}"
        )
    return proc


def base_config() -> dict:
    """The embedded default config as a dict."""
    return yaml.safe_load((REPO / "config/config.yaml").read_text())


def tiny_config(**sections: dict) -> dict:
    """The embedded default with every study disabled except the given sections (merged in)."""
    cfg = base_config()
    for study in ("fairness", "position", "blindspot"):
        if study not in sections:
            cfg[study] = {**cfg.get(study, {}), "enabled": False}
    return deep_merge(cfg, {k: {"enabled": True, **v} for k, v in sections.items()})


def dry_run_jobs(output: str) -> list[dict]:
    """The jobs of a ``snakemake -n`` listing: rule name, wildcards (as text and as a dict), the
    reason Snakemake gives, the resources and the input, output and benchmark files of each."""
    jobs = []
    for line in output.splitlines():
        if line.startswith(("rule ", "localrule ", "checkpoint ")):
            jobs.append(
                {
                    "rule": line.split()[-1].rstrip(":"),
                    "wildcards": "",
                    "wildcard_values": {},
                    "reason": "",
                    "resources": {},
                    "input": [],
                    "output": [],
                    "benchmark": [],
                }
            )
        elif jobs and line.startswith("    "):
            key, _, value = line.strip().partition(": ")
            if key == "wildcards":
                jobs[-1]["wildcards"] = value
                jobs[-1]["wildcard_values"] = dict(w.split("=", 1) for w in value.split(", ") if "=" in w)
            elif key in ("input", "output", "benchmark"):
                jobs[-1][key] = value.split(", ")
            elif key == "reason":
                jobs[-1]["reason"] = value
            elif key == "resources":
                jobs[-1]["resources"] = dict(item.split("=", 1) for item in value.split(", ") if "=" in item)
    return jobs


def job_table(workdir: Path):
    """The per-job benchmark table (``thinkbias.report.benchmarks``) of every model job's metrics file
    a run in ``workdir`` wrote."""
    from thinkbias.report.benchmarks import benchmark_table

    root = workdir / "results/job_metrics"
    return benchmark_table(sorted(root.rglob("*.json")), root, workdir / "results/benchmarks")
