"""Request-cache entries carry a checksum of kind, key and value, checked on every read: an entry
edited on disk stops the job naming the file, the entry and what to do; a file written before
checksums existed still serves, its entries counted as unverified until stored again; the verify
command checks a whole cache folder."""

from __future__ import annotations

import json
import logging
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.llm.mounts import read_only_view
from thinkbias.llm.cache import CacheStorageError, RequestCache, cache_path
from thinkbias.llm.cache_json import generation_to_json
from thinkbias.llm.metrics import read_job_metrics
from thinkbias.llm.run import run_requests
from thinkbias.llm.types import Request, Sampling
from thinkbias.workflow import rule_logging

REPO = Path(__file__).resolve().parents[2]
KEY_A, KEY_B = "a1" * 32, "b2" * 32  # keys are sha256 hex digests
OLD_SCHEMA = """
CREATE TABLE entries (kind TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, created REAL NOT NULL,
                      PRIMARY KEY (kind, key));
CREATE TABLE leases (kind TEXT NOT NULL, key TEXT NOT NULL, host TEXT NOT NULL, pid INTEGER NOT NULL,
                     started TEXT NOT NULL, token TEXT NOT NULL, acquired REAL NOT NULL, renewed REAL NOT NULL,
                     PRIMARY KEY (kind, key));
"""


def old_format_file(path: Path, entries: dict[tuple[str, str], object]) -> Path:
    """A cache file as written before entries carried a checksum (its schema, its JSON)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.executescript(OLD_SCHEMA)
    conn.executemany(
        "INSERT INTO entries(kind, key, value, created) VALUES (?, ?, ?, 0)",
        [(kind, key, json.dumps(value, separators=(",", ":"))) for (kind, key), value in entries.items()],
    )
    conn.commit()
    conn.close()
    return path


def edit(path: Path, sql: str) -> None:
    """Change the file behind the cache's back, as an editor would."""
    conn = sqlite3.connect(path)
    conn.execute(sql)
    conn.commit()
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"  # SQLite sees nothing wrong
    conn.close()


def stored(path: Path, entries: dict[tuple[str, str], object]) -> Path:
    cache = RequestCache(path)
    for (kind, key), value in entries.items():
        cache.put(kind, key, value)
    cache.close()
    return path


def verify(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "thinkbias.llm.cache_verify", *args], capture_output=True, text=True, cwd=REPO
    )


def test_a_value_edited_on_disk_is_refused_naming_the_file_the_entry_and_what_to_do(tmp_path):
    path = stored(tmp_path / "m.sqlite", {("gen", KEY_A): {"answer": "A"}, ("gen", KEY_B): {"answer": "B"}})
    edit(path, f"UPDATE entries SET value = replace(value, '\"A\"', '\"D\"') WHERE key = '{KEY_A}'")
    cache = RequestCache(path)
    with pytest.raises(CacheStorageError) as info:
        cache.get("gen", KEY_A)
    err = info.value
    assert type(err).__name__ == "CacheIntegrityError" and (err.kind, err.key) == ("gen", KEY_A)
    text = str(err)
    assert text.startswith(f"request cache {path}: refused the stored gen result of key {KEY_A[:16]}…")
    assert "will not be requested again silently" in text
    assert f"python -m thinkbias.llm.cache_verify --delete gen:{KEY_A} {path}" in text
    assert cache.get("gen", KEY_B) == {"answer": "B"}  # the untouched entry still serves
    cache.close()


def test_an_edited_key_is_refused(tmp_path):
    """An entry moved to another request's key answers that request with another's result."""
    path = stored(tmp_path / "m.sqlite", {("gen", KEY_A): {"answer": "A"}})
    edit(path, f"UPDATE entries SET key = '{KEY_B}' WHERE key = '{KEY_A}'")
    cache = RequestCache(path)
    with pytest.raises(CacheStorageError, match=f"refused the stored gen result of key {KEY_B[:16]}"):
        cache.get("gen", KEY_B)
    cache.close()


def test_an_old_format_file_serves_counted_unverified_until_its_entries_are_stored_again(tmp_path, caplog):
    path = old_format_file(tmp_path / "m.sqlite", {("gen", KEY_A): {"answer": "A"}, ("score", KEY_B): [0.5]})
    counted = []
    with caplog.at_level(logging.WARNING, logger="thinkbias.llm.cache"):
        cache = RequestCache(path, on_unverified=lambda: counted.append(1))
        assert cache.get("gen", KEY_A) == {"answer": "A"} and cache.get("score", KEY_B) == [0.5]
    assert cache.unverified_served == 2 and len(counted) == 2
    assert "serving entries written before entries carried a checksum" in caplog.text
    columns = [row[1] for row in cache._conn.execute("PRAGMA table_info(entries)")]
    assert columns == ["kind", "key", "value", "created", "checksum"]  # added on opening it writable
    cache.put("gen", KEY_A, {"answer": "A"})  # stored again: now with its checksum
    assert cache.get("gen", KEY_A) == {"answer": "A"} and cache.unverified_served == 2
    cache.close()
    edit(path, "UPDATE entries SET value = '{\"answer\":\"D\"}' WHERE kind = 'gen'")
    with pytest.raises(CacheStorageError, match="does not match its checksum"):
        RequestCache(path).get("gen", KEY_A)


def test_sealing_vouches_for_the_unverified_entries_as_they_are(tmp_path):
    path = old_format_file(tmp_path / "c" / "m.sqlite", {("gen", KEY_A): {"answer": "A"}})
    done = verify("--seal", str(tmp_path / "c"))
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"{path}: 1 unverified entries given a checksum\n"
    cache = RequestCache(path)
    assert cache.get("gen", KEY_A) == {"answer": "A"} and cache.unverified_served == 0
    cache.close()


def test_a_read_only_old_format_file_serves_and_counts_unverified(tmp_path):
    old_format_file(tmp_path / "c" / "m.sqlite", {("gen", KEY_A): {"answer": "A"}})
    with read_only_view(tmp_path / "c", tmp_path / "ro") as ro:
        reader = RequestCache(ro / "m.sqlite")
        assert reader.read_only and reader.get("gen", KEY_A) == {"answer": "A"} and reader.get("gen", KEY_B) is None
        assert reader.unverified_served == 1
        reader.close()


def test_a_read_only_checksummed_file_refuses_an_edited_entry(tmp_path):
    path = stored(tmp_path / "c" / "m.sqlite", {("gen", KEY_A): {"answer": "A"}})
    edit(path, 'UPDATE entries SET value = \'{"answer":"D"}\'')
    with read_only_view(tmp_path / "c", tmp_path / "ro") as ro:
        reader = RequestCache(ro / "m.sqlite")
        with pytest.raises(CacheStorageError, match=f"request cache {ro / 'm.sqlite'}: refused"):
            reader.get("gen", KEY_A)
        reader.close()


def test_the_verify_command_counts_a_folder_and_fails_on_a_mismatch(tmp_path):
    folder = tmp_path / "released"
    stored(folder / "good.sqlite", {("gen", KEY_A): {"answer": "A"}, ("probe", KEY_B): [{"probs": {"A": 1.0}}]})
    old_format_file(folder / "old.sqlite", {("gen", KEY_A): {"answer": "A"}, ("gen", KEY_B): {"answer": "B"}})
    tampered = stored(folder / "tampered.sqlite", {("gen", KEY_A): {"answer": "A"}, ("gen", KEY_B): {"answer": "B"}})
    edit(tampered, f"UPDATE entries SET value = '{{\"answer\":\"D\"}}' WHERE key = '{KEY_B}'")
    done = verify(str(folder))
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines() == [
        f"{folder / 'good.sqlite'}: 2 entries, 2 verified, 0 unverified, 0 mismatched",
        f"{folder / 'old.sqlite'}: 2 entries, 0 verified, 2 unverified, 0 mismatched",
        f"{folder / 'tampered.sqlite'}: 2 entries, 1 verified, 0 unverified, 1 mismatched: gen:{KEY_B}",
        "3 file(s): 6 entries, 3 verified, 2 unverified, 1 mismatched; 1 file(s) failed the check",
    ]
    assert [row[1] for row in sqlite3.connect(folder / "old.sqlite").execute("PRAGMA table_info(entries)")] == [
        "kind",
        "key",
        "value",
        "created",
    ]  # checking changed nothing
    assert verify(str(folder / "good.sqlite"), str(folder / "old.sqlite")).returncode == 0
    deleted = verify("--delete", f"gen:{KEY_B}", str(tampered))
    assert deleted.stdout == f"{tampered}: gen:{KEY_B} deleted; the next run computes it again\n"
    assert verify(str(folder)).returncode == 0


def test_a_job_on_an_old_cache_reports_cache_unverified_and_a_tampered_one_stops(fresh_engine, tmp_path):
    """On the embedded model: a job served from an old-format cache generates nothing and its
    metrics count the unverified results; an edited result stops the next job naming the request,
    with nothing generated."""
    reqs = [Request.chat(f"Name a colour, number {i}.", sampling=Sampling(max_tokens=3)) for i in range(3)]
    engine = fresh_engine(tmp_path / "cache")
    first = run_requests(engine, reqs)
    path = engine.cache.path
    engine.close()
    edit(path, "ALTER TABLE entries DROP COLUMN checksum")  # as written before entries carried one

    again = fresh_engine(tmp_path / "cache")
    with rule_logging(tmp_path / "job.log", metrics=tmp_path / "job.json") as logger:
        served = run_requests(again, reqs, logger)
    assert [g.text for g in served] == [g.text for g in first] and all(g.cached for g in served)
    metrics = read_job_metrics(tmp_path / "job.json")
    assert (metrics.cached, metrics.cache_unverified, metrics.generated_tokens) == (3, 3, 0)
    assert json.loads((tmp_path / "job.json").read_text())["cache_unverified"] == 3
    assert "cache_unverified=3" in (tmp_path / "job.log").read_text()
    for req, g in zip(reqs, first):  # stored again: verified from now on
        again.cache.put("gen", again.gen_key(req), generation_to_json(g))
    key = again.gen_key(reqs[1])
    again.close()
    tokens = '"completion_tokens":'
    edit(path, f"UPDATE entries SET value = replace(value, '{tokens}', '{tokens}1') WHERE key = '{key}'")

    third = fresh_engine(tmp_path / "cache")
    with pytest.raises(CacheStorageError) as info:
        run_requests(third, reqs)
    assert f"request cache {path}: refused the stored gen result of key {key[:16]}…" in str(info.value)
    assert "(request: user message 'Name a colour, number 1.')" in str(info.value)
    assert third.stats.generated_tokens == 0 and third.stats.requests == 0


def test_cache_path_files_carry_the_checksum_column_from_the_start(tmp_path):
    cache = RequestCache(cache_path(tmp_path, "org/model"))
    cache.put("embed", KEY_A, [0.25, 0.5])
    kind, key, value, checksum = next(cache.rows())
    assert (kind, key, value) == ("embed", KEY_A, "[0.25,0.5]") and len(checksum) == 32
    cache.close()


def test_get_many_checks_each_entry_and_counts_the_unverified(tmp_path):
    keys = [f"{i:064x}" for i in range(70)]  # more than one query's worth
    path = stored(tmp_path / "m.sqlite", {("score", k): [i] for i, k in enumerate(keys)})
    cache = RequestCache(path)
    assert cache.get_many("score", [*keys, KEY_A]) == {k: [i] for i, k in enumerate(keys)}
    cache.close()
    edit(path, f"UPDATE entries SET checksum = NULL WHERE key = '{keys[3]}'")
    edit(path, f"UPDATE entries SET value = '[7]' WHERE key = '{keys[40]}'")
    cache = RequestCache(path)
    with pytest.raises(CacheStorageError, match=f"refused the stored score result of key {keys[40][:16]}"):
        cache.get_many("score", keys)
    assert cache.get_many("score", keys[:40]) == {k: [i] for i, k in enumerate(keys[:40])}
    assert cache.unverified_served == 2  # keys[3], served by both calls
    cache.close()
