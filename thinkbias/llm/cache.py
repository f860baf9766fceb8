"""The persistent request cache: one SQLite file per model under the configured ``cache_dir``.

Every generation, score, probe and embedding goes through it, keyed by a sha256 of (model id,
weights sha256, rendered prompt incl. prefill, sampling parameters incl. seed) plus, for scores and
probes, the cue, cuts and candidates. Results are written and committed one by one as soon as they
exist, so a job killed with SIGKILL loses at most the requests in flight, and a rerun pays only for
what is missing. The database runs in WAL mode with a generous busy timeout, so concurrent jobs
(several Snakemake jobs of the same model) can read and write it without corrupting it.

WAL needs a file system with working shared memory and locks (any local disk). On network file
systems that lack them (some NFS setups on clusters) set ``THINKBIAS_CACHE_JOURNAL=DELETE`` to use
SQLite's rollback journal instead.

A second table holds leases (``thinkbias.llm.leases``): the keys a live process is generating now,
so that another process waits for them instead of generating them twice. ``claim`` leases keys
(taking over expired leases), ``put`` stores a result and frees its lease in one commit,
``release`` frees what was not finished.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from thinkbias.llm.leases import Holder, lease_expired, lease_ttl_s, new_holder, retire

SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (kind, key)
);
CREATE TABLE IF NOT EXISTS leases (
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    started TEXT NOT NULL,
    token TEXT NOT NULL,
    acquired REAL NOT NULL,
    renewed REAL NOT NULL,
    PRIMARY KEY (kind, key)
);
"""


@dataclass
class Claim:
    """What ``RequestCache.claim`` got: keys leased now (``mine``), keys a live holder keeps
    (``held``), and the expired holders whose keys were taken over (``taken_over``)."""

    mine: list[str] = field(default_factory=list)
    held: dict[str, Holder] = field(default_factory=dict)
    taken_over: dict[str, Holder] = field(default_factory=dict)


def cache_path(cache_dir: str | Path, model_id: str) -> Path:
    """The SQLite file of one model: ``<cache_dir>/<model id>.sqlite`` (id made file-name safe)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", model_id)
    return Path(cache_dir) / f"{safe}.sqlite"


class RequestCache:
    """A key -> JSON value store per result kind (``gen``, ``score``, ``probe``, ``embed`` ...).

    Thread-safe within a process (one connection behind a lock) and safe across processes (SQLite
    locking). ``path=None`` gives an in-memory cache (nothing persists).
    """

    def __init__(self, path: str | Path | None, timeout_s: float = 120.0, holder: Holder | None = None):
        self.path = None if path is None else Path(path)
        self._lock = threading.Lock()
        self.holder = holder or new_holder()
        self.lease_ttl_s = lease_ttl_s()
        self._heartbeat: threading.Thread | None = None
        self._closing = threading.Event()
        if self.path is None:
            self._conn = sqlite3.connect(":memory:", check_same_thread=False)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(self.path), timeout=timeout_s, check_same_thread=False)
            journal = os.environ.get("THINKBIAS_CACHE_JOURNAL", "WAL").upper()
            self._retry(lambda: self._conn.execute(f"PRAGMA journal_mode={journal}"))
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000)}")
        self._retry(lambda: (self._conn.executescript(SCHEMA), self._conn.commit()))

    @staticmethod
    def _retry(fn, attempts: int = 20):
        for i in range(attempts):
            try:
                return fn()
            except sqlite3.OperationalError as err:  # "database is locked" while another job sets up
                if "locked" not in str(err) or i == attempts - 1:
                    raise
                time.sleep(0.05 * (i + 1))

    def get(self, kind: str, key: str) -> Any | None:
        """The stored value (decoded JSON) or None."""
        with self._lock:
            row = self._conn.execute("SELECT value FROM entries WHERE kind=? AND key=?", (kind, key)).fetchone()
        return None if row is None else json.loads(row[0])

    def put(self, kind: str, key: str, value: Any) -> None:
        """Store ``value`` (JSON-serialisable), free this connection's lease of it, commit at once."""
        text = json.dumps(value, separators=(",", ":"))

        def write():
            self._conn.execute(
                "INSERT OR REPLACE INTO entries(kind, key, value, created) VALUES (?, ?, ?, ?)",
                (kind, key, text, time.time()),
            )
            self._conn.execute("DELETE FROM leases WHERE kind=? AND key=? AND token=?", (kind, key, self.holder.token))
            self._conn.commit()

        with self._lock:
            self._retry(write)

    def count(self, kind: str | None = None) -> int:
        """Number of stored entries (of one kind, or all)."""
        with self._lock:
            if kind is None:
                return self._conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
            return self._conn.execute("SELECT COUNT(*) FROM entries WHERE kind=?", (kind,)).fetchone()[0]

    # -- leases -------------------------------------------------------------------------------
    def claim(self, kind: str, keys: Sequence[str]) -> Claim:
        """Lease every key that is free or whose lease expired (``lease_expired``); report the
        others with their holder. One commit for all keys."""
        h = self.holder
        out = Claim()

        def lease():
            now = time.time()
            out.mine.clear()  # a retry after "database is locked" starts over
            out.held.clear()
            out.taken_over.clear()
            for key in keys:
                expired: Holder | None = None
                for _ in range(2):  # a second pass after removing an expired lease
                    self._conn.execute(
                        "INSERT OR IGNORE INTO leases(kind, key, host, pid, started, token, acquired, renewed) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        (kind, key, h.host, h.pid, h.started, h.token, now, now),
                    )
                    host, pid, started, token, renewed = self._conn.execute(
                        "SELECT host, pid, started, token, renewed FROM leases WHERE kind=? AND key=?", (kind, key)
                    ).fetchone()
                    other = Holder(host, int(pid), started, token)
                    if token == h.token:
                        out.mine.append(key)
                        if expired is not None:
                            out.taken_over[key] = expired
                        break
                    if expired is not None or not lease_expired(other, renewed, self.lease_ttl_s, now):
                        out.held[key] = other
                        break
                    expired = other
                    self._conn.execute("DELETE FROM leases WHERE kind=? AND key=? AND token=?", (kind, key, token))
            self._conn.commit()

        with self._lock:
            self._retry(lease)
            if out.mine and self._heartbeat is None and self.path is not None:
                self._heartbeat = threading.Thread(target=self._renew_loop, name="cache-lease-renewal", daemon=True)
                self._heartbeat.start()
        return out

    def release(self, kind: str, keys: Sequence[str]) -> None:
        """Free this connection's leases of ``keys`` (those not finished: nothing else is lost)."""

        def free():
            self._conn.executemany(
                "DELETE FROM leases WHERE kind=? AND key=? AND token=?", [(kind, k, self.holder.token) for k in keys]
            )
            self._conn.commit()

        with self._lock:
            self._retry(free)

    def leases(self) -> list[tuple[str, str, Holder, float]]:
        """Every lease as (kind, key, holder, last renewal)."""
        with self._lock:
            rows = self._conn.execute("SELECT kind, key, host, pid, started, token, renewed FROM leases").fetchall()
        return [
            (k, key, Holder(host, int(pid), started, token), renewed)
            for k, key, host, pid, started, token, renewed in rows
        ]

    def _renew_loop(self) -> None:
        """Renew this connection's leases every ``ttl / 5`` s until the cache closes."""
        while not self._closing.wait(max(0.05, self.lease_ttl_s / 5)):

            def renew():
                self._conn.execute("UPDATE leases SET renewed=? WHERE token=?", (time.time(), self.holder.token))
                self._conn.commit()

            try:
                with self._lock:
                    self._retry(renew)
            except sqlite3.Error:  # closed underneath, or locked for too long: the next round retries
                continue

    def close(self) -> None:
        self._closing.set()
        if self._heartbeat is not None:
            self._heartbeat.join()
        with self._lock:
            try:
                self._conn.execute("DELETE FROM leases WHERE token=?", (self.holder.token,))
                self._conn.commit()
            except sqlite3.Error:
                pass  # the leases then expire: this holder is retired below
            self._conn.close()
        retire(self.holder)
