"""Requests another live process is generating are not generated twice: leases in the request cache
(real SQLite files), then real job processes on the embedded model sharing one cache, one of them
killed."""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from thinkbias.llm.cache import RequestCache, cache_path
from thinkbias.llm.leases import Holder, holder_gone, new_holder, process_start

REPO = Path(__file__).resolve().parents[2]
JOB = Path(__file__).with_name("lease_job.py")


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_live_holder_keeps_its_lease_and_a_closed_one_frees_it(tmp_path):
    path = tmp_path / "m.sqlite"
    a, b = RequestCache(path), RequestCache(path)
    claim = a.claim("gen", ["k1", "k2"])
    assert claim.mine == ["k1", "k2"] and not claim.held
    other = b.claim("gen", ["k1", "k2", "k3"])
    assert other.mine == ["k3"] and set(other.held) == {"k1", "k2"} and other.held["k1"] == a.holder
    a.put("gen", "k1", {"text": "done"})  # a stored result frees its lease in the same commit
    assert [k for _, k, h, _ in b.leases() if h == a.holder] == ["k2"]
    a.close()  # its cache closed: what it held is free at once
    assert b.claim("gen", ["k2"]).mine == ["k2"]
    b.close()


def test_a_dead_process_lease_is_taken_over_at_once_and_pid_reuse_is_seen(tmp_path):
    path = tmp_path / "m.sqlite"
    host = socket.gethostname()
    dead = Holder(host, dead_pid(), "1", "dead-token")
    ghost = RequestCache(path, holder=dead)  # writes the lease a process that died would have left
    ghost.claim("gen", ["k"])
    c = RequestCache(path)
    claim = c.claim("gen", ["k"])
    assert claim.mine == ["k"] and claim.taken_over == {"k": dead}
    ghost.close()
    # the pid of a live process, but one that started at another time: a reused pid, not the holder
    parent = os.getppid()
    assert not holder_gone(Holder(host, parent, process_start(parent), "t"))
    assert holder_gone(Holder(host, parent, "12345", "t"))
    c.close()


def test_a_holder_on_another_host_expires_only_when_it_stops_renewing(tmp_path, monkeypatch):
    monkeypatch.setenv("THINKBIAS_CACHE_LEASE_S", "0.6")
    path = tmp_path / "m.sqlite"
    remote = Holder("another-host.example", 4242, "7", "remote-token")
    holder = RequestCache(path, holder=remote)  # renews every 0.12 s from its own thread
    holder.claim("gen", ["k"])
    local = RequestCache(path)
    time.sleep(1.2)  # twice the TTL: still renewed, so still held
    assert set(local.claim("gen", ["k"]).held) == {"k"}
    holder._closing.set()  # the holder stops renewing (as a hung or unreachable host would)
    holder._heartbeat.join()
    time.sleep(0.8)
    claim = local.claim("gen", ["k"])
    assert claim.mine == ["k"] and claim.taken_over["k"].host == "another-host.example"
    local.close()


def test_leases_of_this_process_are_live_until_its_cache_closes():
    me = new_holder()
    assert not holder_gone(me) and me.pid == os.getpid()


# -- real job processes on the embedded model ---------------------------------------------------


def job(spec, cache_dir: Path, n: int, mode: str, *signals: Path, **env: str) -> subprocess.Popen:
    """``lease_job.py`` as its own process (stdout: its JSON report, stderr: its log)."""
    return subprocess.Popen(
        [
            sys.executable,
            str(JOB),
            str(REPO / "config/models.yaml"),
            spec.weights,
            str(cache_dir),
            str(n),
            mode,
            *map(str, signals),
        ],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def report(proc: subprocess.Popen, timeout: float = 300) -> tuple[dict, str]:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1]), err


def wait_for(pred, timeout: float = 120, what: str = "") -> None:
    deadline = time.time() + timeout
    while not pred():
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def count(db: Path, table: str) -> int:
    """Rows of a table of the cache file (0 while it does not exist yet)."""
    if not db.exists():
        return 0
    conn = sqlite3.connect(db)
    try:
        return conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
    except sqlite3.OperationalError:
        return 0
    finally:
        conn.close()


def lease_rows(db: Path) -> int:
    return count(db, "leases")


@pytest.mark.slow
def test_second_process_waits_for_what_the_first_is_generating(spec, tmp_path):
    """Job A generates 5 requests; job B, the same job started while A runs (Snakemake killed, the
    job still running, a rerun after --unlock), generates none of them: it waits for A's results."""
    n, db = 5, cache_path(tmp_path, spec.id)
    ready, go = tmp_path / "b.ready", tmp_path / "b.go"
    b = job(spec, tmp_path, n, "generate", ready, go)
    wait_for(ready.exists, what="job B to load its model")
    a = job(spec, tmp_path, n, "generate")
    wait_for(lambda: lease_rows(db) == n, what="job A to lease its requests")
    go.touch()
    ra, _ = report(a)
    rb, log_b = report(b)
    assert ra["generated_tokens"] == sum(ra["completion_tokens"]) > 0
    assert rb["generated_tokens"] == 0 and rb["prompt_tokens"] == 0
    assert rb["awaited"] == n and rb["cache_hits"] == n and rb["texts"] == ra["texts"]
    assert "being generated by pid" in log_b and f"pid {a.pid}" in log_b
    assert lease_rows(db) == 0


@pytest.mark.slow
def test_two_processes_share_a_batch_of_generate_and_probe(spec, tmp_path):
    """Two jobs started together on the same 6 requests (generate + probe, one request at a time)
    split them: every request is generated exactly once across both processes."""
    n = 6
    signals = [(tmp_path / f"{x}.ready", tmp_path / "go") for x in "ab"]
    procs = [job(spec, tmp_path, n, "gap", *s) for s in signals]
    wait_for(lambda: all(r.exists() for r, _ in signals), what="both jobs to load their model")
    (tmp_path / "go").touch()
    (ra, _), (rb, _) = report(procs[0]), report(procs[1])
    assert ra["texts"] == rb["texts"]
    per_request = ra["completion_tokens"]
    assert ra["generated_tokens"] + rb["generated_tokens"] == sum(per_request)
    assert ra["awaited"] + rb["awaited"] <= n and ra["taken_over"] == rb["taken_over"] == 0


@pytest.mark.slow
def test_a_killed_holder_lease_is_taken_over_without_waiting_for_expiry(spec, tmp_path):
    """Job A is killed with SIGKILL mid-batch, its leases left behind; the rerun (lease TTL one
    hour) sees A's pid gone, takes the unfinished requests over at once and pays only for them."""
    n, db = 6, cache_path(tmp_path, spec.id)
    a = job(spec, tmp_path, n, "generate")
    wait_for(lambda: count(db, "entries") >= 2, what="job A to finish two requests")
    a.send_signal(signal.SIGKILL)
    a.wait()
    assert a.returncode == -signal.SIGKILL, "job A finished before it could be killed"
    finished, left = count(db, "entries"), count(db, "leases")
    assert finished < n and left == n - finished
    start = time.time()
    rb, log = report(job(spec, tmp_path, n, "generate", THINKBIAS_CACHE_LEASE_S="3600"))
    assert rb["cache_hits"] == finished and rb["taken_over"] == n - finished and rb["awaited"] == 0
    assert rb["generated_tokens"] == sum(c for c, hit in zip(rb["completion_tokens"], rb["cached"]) if not hit) > 0
    assert f"taking over {n - finished} requests leased by pid {a.pid}" in log
    assert time.time() - start < 300 and lease_rows(db) == 0


@pytest.mark.slow
def test_rerun_after_killing_snakemake_waits_for_the_orphaned_job(workflow_dir, embedded_model):
    """Snakemake is killed while its generation job runs; the job goes on as an orphan. After
    ``--unlock`` the rerun starts the same job again: it generates nothing the orphan is
    generating and takes the orphan's results from the cache as they come."""
    from tests.helpers import SNAKEMAKE, run_snakemake, tiny_config

    cfg = tiny_config(
        position={
            "benchmarks": {"mmlu": {"path": "resources/raw/mmlu/mmlu.jsonl", "n_questions": 3}},
            "runs": [{"model": "smollm2-135m", "mode": "reasoning"}],
            "wilcoxon_pairs": [],
            "max_tokens": {"reasoning": 64},
            "truncation": {"runs": []},
        }
    )
    cfg_path = workflow_dir / "test-config.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    env = {**os.environ, "THINKBIAS_OFFLINE": "1", "THINKBIAS_THREADS": "1", "PYTHONPATH": str(REPO)}
    first = subprocess.Popen(
        SNAKEMAKE
        + [
            "--directory",
            str(workflow_dir),
            "--snakefile",
            str(workflow_dir / "Snakefile"),
            "--configfile",
            str(cfg_path),
            "--cores",
            "1",
            "position",
        ],
        cwd=workflow_dir,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    db = cache_path(workflow_dir / "cache", "smollm2-135m")
    wait_for(lambda: lease_rows(db) > 0, timeout=300, what="the generation job to lease its requests")
    orphan = sqlite3.connect(db).execute("SELECT DISTINCT pid FROM leases").fetchone()[0]
    first.send_signal(signal.SIGKILL)  # Snakemake only: its job keeps running
    first.wait()
    try:
        assert os.path.exists(f"/proc/{orphan}") and count(db, "entries") < 12
        run_snakemake(workflow_dir, ["--unlock"], config=cfg, timeout=300)
        run_snakemake(workflow_dir, ["--cores", "1", "position"], config=cfg, timeout=900)
        wait_for(lambda: not os.path.exists(f"/proc/{orphan}"), timeout=120, what="the orphaned job to end")
    finally:
        if os.path.exists(f"/proc/{orphan}"):
            os.kill(orphan, signal.SIGKILL)
    text = (workflow_dir / "logs/position/generate/mmlu/smollm2-135m/reasoning/shard-0.log").read_text()
    closing = [
        int(line.split("generated_tokens=")[1].split()[0])
        for line in text.splitlines()
        if ": finished, generated_tokens=" in line
    ]
    # the log is the rerun's (Snakemake replaced the orphan's): it generated nothing, it waited
    assert closing == [0], text[-3000:]
    assert f"being generated by pid {orphan}" in text and count(db, "entries") == 12 and lease_rows(db) == 0
