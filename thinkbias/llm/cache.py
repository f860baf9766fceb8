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
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (kind, key)
)
"""


def cache_path(cache_dir: str | Path, model_id: str) -> Path:
    """The SQLite file of one model: ``<cache_dir>/<model id>.sqlite`` (id made file-name safe)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", model_id)
    return Path(cache_dir) / f"{safe}.sqlite"


class RequestCache:
    """A key -> JSON value store per result kind (``gen``, ``score``, ``probe``, ``embed`` ...).

    Thread-safe within a process (one connection behind a lock) and safe across processes (SQLite
    locking). ``path=None`` gives an in-memory cache (nothing persists).
    """

    def __init__(self, path: str | Path | None, timeout_s: float = 120.0):
        self.path = None if path is None else Path(path)
        self._lock = threading.Lock()
        if self.path is None:
            self._conn = sqlite3.connect(":memory:", check_same_thread=False)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(self.path), timeout=timeout_s, check_same_thread=False)
            journal = os.environ.get("THINKBIAS_CACHE_JOURNAL", "WAL").upper()
            self._retry(lambda: self._conn.execute(f"PRAGMA journal_mode={journal}"))
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000)}")
        self._retry(lambda: (self._conn.execute(SCHEMA), self._conn.commit()))

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
        """Store ``value`` (JSON-serialisable) and commit at once."""
        text = json.dumps(value, separators=(",", ":"))

        def write():
            self._conn.execute(
                "INSERT OR REPLACE INTO entries(kind, key, value, created) VALUES (?, ?, ?, ?)",
                (kind, key, text, time.time()),
            )
            self._conn.commit()

        with self._lock:
            self._retry(write)

    def count(self, kind: str | None = None) -> int:
        """Number of stored entries (of one kind, or all)."""
        with self._lock:
            if kind is None:
                return self._conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
            return self._conn.execute("SELECT COUNT(*) FROM entries WHERE kind=?", (kind,)).fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._conn.close()
