"""The workflow on a real single-node SLURM cluster, submitted through profiles/slurm.

A session fixture starts slurmctld, slurmd, slurmdbd (MariaDB, so `sacct` works) and one fake GPU
as GRES with tests/slurm/local-slurm.sh, and stops them at the end. A small fairness configuration
runs once locally and once through `--profile profiles/slurm`. Its model is the embedded GGUF under
a registry entry that declares `gpus: 1`, so the model rules carry `resources: gpu=1`. The SLURM
run is interrupted: one generation job is cancelled with `scancel` after a few requests, and a
rerun has to finish it from the request cache.

Needs root and apt-get (Debian/Ubuntu) to install the SLURM packages; skipped otherwise.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.helpers import EMBEDDED_MODEL, REPO, make_workflow_dir, run_snakemake, tiny_config

pytestmark = pytest.mark.slow

SCRIPT = Path(__file__).with_name("local-slurm.sh")
SLURM_CONF = "/etc/slurm/slurm.conf"  # written by local-slurm.sh (its CONF_DIR)
PROFILE = REPO / "profiles" / "slurm"
GPU_MODEL = "smollm2-135m-gpu"  # the embedded model, declared to need one GPU
RUN = "slurmtest"
RUN_LIMIT_S = 420  # per Snakemake invocation; `timeout -k` because the plugin can ignore SIGTERM
FAIRNESS = {
    "run": RUN,
    "models": [GPU_MODEL],
    "datasets": ["adult"],
    "n_records": 2,
    "think_budget": 24,
    "answer_budget": 6,
}
SETTING = f"results/fairness/{RUN}"
# Counterfactual prompts (a CPU job), then the thinking arm's generation (a GPU job).
TARGETS = [f"{SETTING}/generations/adult/{GPU_MODEL}/think/shard-0.parquet"]
KILLED_ARM = "think"  # the generation job cancelled halfway through
KILLED_OUTPUT = TARGETS[0]
# Rules expected to run inside the Snakemake process rather than through sbatch.
LOCAL_RULES = {"fetch"}


# ---------------------------------------------------------------------------------------------
# The cluster


def cluster_env(extra: dict | None = None) -> dict:
    return {**os.environ, "DEBIAN_FRONTEND": "noninteractive", "SLURM_CONF": SLURM_CONF, **(extra or {})}


@pytest.fixture(scope="module", autouse=True)
def real_slurm_conf():
    """This module's SLURM commands (sbatch, sacct, squeue, scancel, through Snakemake too) read the
    cluster's configuration, not the other tests' (tests/no-slurm-controller.conf)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SLURM_CONF", SLURM_CONF)
        yield


def profile_settings() -> dict:
    return yaml.safe_load((PROFILE / "config.yaml").read_text())


def node_memory_mb() -> int:
    """Memory the test node advertises: room for two of the profile's largest jobs at once."""
    profile = profile_settings()
    sizes = [profile["default-resources"]["mem_mb"]]
    sizes += [res.get("mem_mb", 0) for res in profile.get("set-resources", {}).values()]
    return 2 * max(sizes)


@pytest.fixture(scope="session")
def slurm_cluster():
    """A running single-node cluster (accounting on, one fake GPU); stopped at session end."""
    if os.geteuid() != 0:
        pytest.skip("the SLURM test installs and starts system daemons: run it as root")
    if not shutil.which("slurmctld") and not shutil.which("apt-get"):
        pytest.skip("the SLURM test needs apt-get (Debian/Ubuntu) to install slurm-wlm, munge, mariadb")
    env = cluster_env({"SLURM_ACCOUNTING": "1", "SLURM_FAKE_GPUS": "1", "SLURM_NODE_MEM_MB": str(node_memory_mb())})
    start = time.monotonic()
    proc = subprocess.run(["bash", str(SCRIPT), "start"], env=env, capture_output=True, text=True, timeout=900)
    startup_s = time.monotonic() - start
    if proc.returncode == 3:
        pytest.skip(f"this machine has its own SLURM configuration: {proc.stderr.strip()[-300:]}")
    if proc.returncode != 0:
        pytest.fail(f"local SLURM did not start ({proc.returncode}):\n{proc.stdout}\n{proc.stderr[-4000:]}")
    print(f"\nlocal SLURM ready in {startup_s:.1f} s", file=sys.stderr)
    try:
        yield {"startup_s": startup_s, "start_log": proc.stderr}
    finally:
        subprocess.run(["bash", str(SCRIPT), "stop"], env=env, capture_output=True, text=True, timeout=300)


def sacct_jobs(run_id: str) -> list[dict]:
    """Allocations of one Snakemake run (the plugin names every job after the run id)."""
    fields = ["JobID", "JobName", "State", "Comment", "ReqTRES", "AllocTRES", "ExitCode"]
    out = subprocess.run(
        ["sacct", "-X", "-n", "-P", "-S", "now-1days", "--name", run_id, "-o", ",".join(f"{f}%300" for f in fields)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    jobs = [dict(zip(fields, line.split("|"))) for line in out.splitlines() if line.strip()]
    for job in jobs:
        job["rule"] = job["Comment"].removeprefix("rule_").split("_wildcards_")[0]
    return jobs


def settled_sacct_jobs(run_id: str, timeout_s: float = 60) -> list[dict]:
    """sacct rows once no job of the run is pending or running any more."""
    end = time.monotonic() + timeout_s
    while True:
        jobs = sacct_jobs(run_id)
        if all(j["State"] not in ("PENDING", "RUNNING", "COMPLETING") for j in jobs) or time.monotonic() > end:
            return jobs
        time.sleep(1)


def job_state(job_id: str) -> str:
    out = subprocess.run(["squeue", "-h", "-j", job_id, "-o", "%T"], capture_output=True, text=True).stdout
    return out.strip()


# ---------------------------------------------------------------------------------------------
# The workflow runs


def gpu_registry(workdir: Path) -> Path:
    """config/models.yaml plus GPU_MODEL: the embedded llama.cpp entry with `gpus: 1`."""
    registry = yaml.safe_load((REPO / "config/models.yaml").read_text())
    entry = copy.deepcopy(registry["smollm2-135m"])
    entry.pop("source", None)  # its weights are linked below, not downloaded
    entry["gpus"] = 1
    # the GPU is a stand-in GRES: the model runs on the CPU instead of stopping for want of a GPU backend
    entry["extra"] = {**(entry.get("extra") or {}), "cpu_fallback": True}
    entry["description"] = "the embedded SmolLM2-135M GGUF, declared to need one GPU (SLURM test)"
    registry[GPU_MODEL] = entry
    path = workdir / "test-models.yaml"
    path.write_text(yaml.safe_dump(registry, sort_keys=False))
    return path


def prepare_workdir(path: Path) -> Path:
    """An isolated working folder whose resources/models also holds GPU_MODEL's weights (links)."""
    workdir = make_workflow_dir(path)
    models = workdir / "resources" / "models"
    models.unlink()
    models.mkdir()
    for entry in (REPO / "resources" / "models").iterdir():
        (models / entry.name).symlink_to(entry)
    (models / GPU_MODEL).mkdir()
    (models / GPU_MODEL / EMBEDDED_MODEL.name).symlink_to(EMBEDDED_MODEL)
    return workdir


def run_config(workdir: Path) -> dict:
    return {**tiny_config(fairness=FAIRNESS), "registry": str(gpu_registry(workdir))}


@dataclass
class SlurmRun:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    run_id: str = ""
    submitted: dict = field(default_factory=dict)  # SLURM job id -> rule, as Snakemake reported them
    local_jobs: Counter = field(default_factory=Counter)  # rule -> jobs run in the Snakemake process


def parse_run(proc_out: str, proc_err: str, seconds: float, returncode: int) -> SlurmRun:
    text = proc_out + proc_err
    run = SlurmRun(returncode, proc_out, proc_err, seconds)
    match = re.search(r"SLURM run ID: (\S+)", text)
    run.run_id = match.group(1) if match else ""
    run.submitted = dict(re.findall(r"has been submitted with SLURM jobid (\d+) \(log: .*/rule_(\w+)/", text))
    run.local_jobs = Counter(re.findall(r"^localrule (\w+):$", text, flags=re.M))
    return run


def slurm_command(workdir: Path, extra: list[str]) -> list[str]:
    """`snakemake --profile profiles/slurm` with the test cluster's partition and account."""
    defaults = dict(profile_settings()["default-resources"], slurm_partition="debug", slurm_account="root")
    return [
        "timeout",
        "-k",
        "10",
        str(RUN_LIMIT_S),
        sys.executable,
        "-m",
        "snakemake",
        "--directory",
        str(workdir),
        "--snakefile",
        str(workdir / "Snakefile"),
        "--configfile",
        str(workdir / "test-config.yaml"),
        "--profile",
        str(PROFILE),
        "--default-resources",
        *[f"{k}={v}" for k, v in defaults.items()],
        # the test cluster answers at once: a first status query after 2 s, not the profile's 10
        "--slurm-init-seconds-before-status-checks",
        "2",
        *extra,
        "--",
        *TARGETS,
    ]


def snakemake_env() -> dict:
    """The environment of `run_snakemake` (same llama.cpp thread count as the local run); sbatch
    passes it on to the jobs (--export=ALL)."""
    venv_bin = str(Path(sys.executable).parent)
    return {
        **os.environ,
        "THINKBIAS_OFFLINE": "1",
        "THINKBIAS_THREADS": "1",
        "PYTHONPATH": str(REPO),
        "PATH": f"{venv_bin}{os.pathsep}{os.environ.get('PATH', '')}",
    }


def cache_rows(cache_file: Path) -> dict[tuple[str, str], float]:
    """(kind, key) -> created timestamp of every entry of the request cache."""
    if not cache_file.exists():
        return {}
    conn = sqlite3.connect(f"file:{cache_file}?mode=ro", uri=True, timeout=30)
    try:
        rows = conn.execute("SELECT kind, key, created FROM entries").fetchall()
    except sqlite3.OperationalError as err:  # the job is still creating the database
        if "no such table" not in str(err):
            raise
        rows = []
    finally:
        conn.close()
    return {(kind, key): created for kind, key, created in rows}


@dataclass
class KilledRun:
    run: SlurmRun
    job_id: str
    rows_at_kill: dict  # cache rows when the job was cancelled
    rows_before_job: int  # cache rows when the job started


def submitted_job_id(snakemake_output: str, output_path: str) -> str:
    """The SLURM job id Snakemake reported for the job writing ``output_path`` ("" if none yet)."""
    for block in re.split(r"^(?=(?:local)?rule \w+:$)", snakemake_output, flags=re.M):
        jobid = re.search(r"^\s+jobid: (\d+)$", block, flags=re.M)
        if jobid and re.search(rf"^\s+output: .*{re.escape(output_path)}", block, flags=re.M):
            submitted = re.search(
                rf"^Job {jobid.group(1)} has been submitted with SLURM jobid (\d+)", snakemake_output, flags=re.M
            )
            return submitted.group(1) if submitted else ""
    return ""


def child_pids(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(c) for c in children.read_text().split()] if children.exists() else []


def run_and_cancel(workdir: Path, cache_file: Path) -> KilledRun:
    """Start the SLURM run, `scancel` the job of KILLED_OUTPUT once it has cached two requests,
    then stop Snakemake with SIGINT (Ctrl-C).

    The interrupt is needed: plugin 2.8.0 compares sacct's state with a fixed list, and a job
    cancelled by a user is `CANCELLED by <uid>` there, so Snakemake would wait for it forever.
    """
    out_file, err_file = workdir / "interrupted.out", workdir / "interrupted.err"
    start = time.monotonic()
    with out_file.open("w") as out, err_file.open("w") as err:
        proc = subprocess.Popen(
            slurm_command(workdir, ["--retries", "0"]),
            cwd=workdir,
            env=snakemake_env(),
            stdout=out,
            stderr=err,
            text=True,
        )
        job_id, baseline, rows = "", -1, {}
        try:
            while proc.poll() is None and time.monotonic() - start < RUN_LIMIT_S:
                time.sleep(0.2)
                if not job_id:
                    job_id = submitted_job_id(err_file.read_text() + out_file.read_text(), KILLED_OUTPUT)
                elif baseline < 0:
                    if job_state(job_id) == "RUNNING":
                        baseline = len(cache_rows(cache_file))
                elif len(cache_rows(cache_file)) >= baseline + 2:
                    subprocess.run(["scancel", job_id], check=True)
                    while job_state(job_id):
                        time.sleep(0.2)
                    rows = cache_rows(cache_file)
                    for child in child_pids(proc.pid):  # Snakemake, below `timeout`
                        os.kill(child, signal.SIGINT)
                    break
            proc.wait(timeout=RUN_LIMIT_S)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    run = parse_run(out_file.read_text(), err_file.read_text(), time.monotonic() - start, proc.returncode)
    return KilledRun(run, job_id, rows, max(baseline, 0))


@pytest.fixture(scope="module")
def runs(slurm_cluster, embedded_model, tmp_path_factory):
    """The local reference run, the interrupted SLURM run and the SLURM rerun that completes it."""
    local_dir = prepare_workdir(tmp_path_factory.mktemp("local") / "wf")
    slurm_dir = prepare_workdir(tmp_path_factory.mktemp("slurm") / "wf")

    t0 = time.monotonic()
    run_snakemake(local_dir, ["--cores", "2", *TARGETS], config=run_config(local_dir), timeout=RUN_LIMIT_S)
    local_s = time.monotonic() - t0

    (slurm_dir / "test-config.yaml").write_text(yaml.safe_dump(run_config(slurm_dir), sort_keys=False))
    cache_file = slurm_dir / "cache" / f"{GPU_MODEL}.sqlite"
    killed = run_and_cancel(slurm_dir, cache_file)
    t0 = time.monotonic()
    rerun_proc = subprocess.run(
        slurm_command(slurm_dir, []), cwd=slurm_dir, env=snakemake_env(), capture_output=True, text=True
    )
    rerun = parse_run(rerun_proc.stdout, rerun_proc.stderr, time.monotonic() - t0, rerun_proc.returncode)
    timings = {
        "cluster_startup_s": round(slurm_cluster["startup_s"], 1),
        "local_run_s": round(local_s, 1),
        "slurm_interrupted_run_s": round(killed.run.seconds, 1),
        "slurm_rerun_s": round(rerun.seconds, 1),
    }
    print(f"\nSLURM test timings: {json.dumps(timings)}", file=sys.stderr)
    return {
        "local": local_dir,
        "slurm": slurm_dir,
        "killed": killed,
        "rerun": rerun,
        "cache_file": cache_file,
        "timings": timings,
    }


def describe(run: SlurmRun) -> str:
    return f"returncode {run.returncode}\n{run.stdout[-3000:]}\n{run.stderr[-6000:]}"


# ---------------------------------------------------------------------------------------------
# The checks


def test_cancelled_job_fails_the_first_run(runs):
    killed: KilledRun = runs["killed"]
    assert killed.job_id, f"the job of {KILLED_OUTPUT} was not seen:\n{describe(killed.run)}"
    assert killed.rows_at_kill, f"job {killed.job_id} was not cancelled while running:\n{describe(killed.run)}"
    assert killed.run.run_id, describe(killed.run)
    assert killed.run.returncode not in (0, 124, 137), describe(killed.run)  # failed, not timed out
    states = {j["JobID"]: j["State"] for j in settled_sacct_jobs(killed.run.run_id)}
    assert states[killed.job_id].startswith("CANCELLED"), states


def test_rerun_completes_every_job_through_sbatch(runs):
    rerun: SlurmRun = runs["rerun"]
    assert rerun.returncode == 0, describe(rerun)
    assert rerun.submitted, f"the rerun submitted nothing:\n{describe(rerun)}"
    for run in (runs["killed"].run, rerun):
        assert set(run.local_jobs) <= LOCAL_RULES, run.local_jobs
        jobs = settled_sacct_jobs(run.run_id)
        # sacct lists exactly the jobs Snakemake submitted, each under its rule
        assert {j["JobID"]: j["rule"] for j in jobs} == run.submitted, (jobs, run.submitted)
    states = Counter(j["State"] for j in settled_sacct_jobs(rerun.run_id))
    assert set(states) == {"COMPLETED"}, states


def test_gpu_rule_is_submitted_with_a_gpu(runs):
    jobs = settled_sacct_jobs(runs["rerun"].run_id) + settled_sacct_jobs(runs["killed"].run.run_id)
    gpu_jobs = [j for j in jobs if j["rule"] == "fairness_generate"]
    assert gpu_jobs
    for job in gpu_jobs:
        assert "gres/gpu=1" in job["ReqTRES"], job
        if job["State"] == "COMPLETED":
            assert "gres/gpu=1" in job["AllocTRES"], job
    cpu_jobs = [j for j in jobs if j["rule"] == "fairness_prompts"]
    assert cpu_jobs and not any("gres/gpu" in j["ReqTRES"] for j in cpu_jobs), cpu_jobs


def test_rerun_resumes_from_the_cache(runs):
    killed: KilledRun = runs["killed"]
    assert killed.rows_at_kill, "no job was cancelled"
    after = cache_rows(runs["cache_file"])
    # every request finished before the kill is still there, written at the same moment: not redone
    changed = sorted(k for k, created in killed.rows_at_kill.items() if after.get(k) != created)
    assert not changed, f"{len(changed)} requests were generated again"
    assert len(after) > len(killed.rows_at_kill), "the rerun generated nothing new"
    # the rerun's job log: some requests came from the cache, the rest were generated
    log = (
        runs["slurm"] / "logs/fairness" / RUN / "generate/adult" / GPU_MODEL / KILLED_ARM / "shard-0.log"
    ).read_text()
    progress = [
        (int(done), int(total), int(cached))
        for done, total, cached in re.findall(r"done (\d+)/(\d+) \((\d+) cached\)", log)
    ]
    finals = [p for p in progress if p[0] == p[1]]
    assert finals, log[-2000:]
    assert any(cached > 0 for _, _, cached in finals), log[-2000:]
    assert any(cached < total for _, total, cached in finals), log[-2000:]


def test_outputs_equal_a_local_run(runs):
    for target in TARGETS:
        local, slurm = runs["local"] / target, runs["slurm"] / target
        assert slurm.exists(), target
        pd.testing.assert_frame_equal(pd.read_parquet(local), pd.read_parquet(slurm))
