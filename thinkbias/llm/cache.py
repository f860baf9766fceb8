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

A cache whose file or folder this process cannot write (a released cache on a read-only file
system or share) is opened read-only (SQLite ``mode=ro``, or ``immutable=1`` when the folder
cannot even hold WAL's shared-memory file): every result it holds is served, and the first result
it lacks stops the job with ``CacheReadOnly``, naming the file, before anything is computed for a
generation (at ``claim``) or right after a score or probe. Storage failures (the folder is a file,
a full disk, an unreadable file) raise ``CacheStorageError`` naming the file and the operation;
SQLite's atomic commits keep what was stored before intact.

Each entry carries a checksum of its kind, key and value (``thinkbias.llm.cache_checksum``), written
in the same commit and checked on every read: an entry changed on disk stops the job with
``CacheIntegrityError``, naming the file, the entry and what to do; it is never served nor
requested again silently. A file written before checksums existed gains the column when opened
writable (``ALTER TABLE``) and is served either way; its entries without a checksum are served as
unverified and counted (``unverified_served``, the job metrics' ``cache_unverified``) until they are
stored again (or sealed: ``seal_unverified``). ``python -m thinkbias.llm.cache_verify <folder>``
checks every entry of a cache folder.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence, TypeVar
from urllib.parse import quote

from thinkbias.llm.cache_checksum import VERIFY_COMMAND, entry_checksum, mismatch_message
from thinkbias.llm.leases import Holder, lease_expired, lease_ttl_s, new_holder, retire

T = TypeVar("T")
# Keys per query of ``get_many``: a query per key costs more than reading its value, while a few
# dozen values still fit the CPU's cache between being read and being decoded (benchmarks/bench_cache.py).
MANY = 32
log = logging.getLogger(__name__)

SCHEMA = """
CREATE TABLE IF NOT EXISTS entries (
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    created REAL NOT NULL,
    checksum BLOB,
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


class CacheStorageError(RuntimeError):
    """The request cache's file cannot be opened, read or written; the message names the file."""


class CacheReadOnly(CacheStorageError):
    """A result missing from a read-only cache was needed: a read-only cache cannot store it."""


class CacheIntegrityError(CacheStorageError):
    """A stored entry does not match its checksum: it changed on disk after it was written. It is
    refused, never served nor requested again silently; the message names the file, the entry (kind
    and key, and the request when the caller knows it) and what to do."""

    def __init__(self, path: Path | None, kind: str, key: str, request: str = ""):
        self.path, self.kind, self.key, self.request = path, kind, key, request
        super().__init__(mismatch_message(path, kind, key, request))

    def __reduce__(self):  # picklable across processes with its fields
        return CacheIntegrityError, (self.path, self.kind, self.key, self.request)

    def with_request(self, request: str) -> CacheIntegrityError:
        """The same error, naming the request the entry answers."""
        return CacheIntegrityError(self.path, self.kind, self.key, request)


def storage_error(path: Path, what: str, err: BaseException) -> CacheStorageError:
    """The error of a failed ``what`` (e.g. "store a gen result") on the cache file ``path``."""
    text = str(err)
    if "readonly" in text or "read-only" in text:
        return CacheReadOnly(f"request cache {path}: cannot {what}: the file is read-only ({text})")
    hint = ""
    if "full" in text or "disk I/O" in text:
        hint = (
            f"; is the disk holding {path.parent} full? (df {path.parent}); "
            "the results stored before are intact, and a rerun with space free resumes"
        )
    return CacheStorageError(f"request cache {path}: cannot {what}: {text}{hint}")


def writable(path: Path) -> bool:
    """Whether this process may write the cache file ``path`` and its folder (``os.access``, which
    also says no on a read-only file system, for root too)."""
    return os.access(path.parent, os.W_OK) and (not path.exists() or os.access(path, os.W_OK))


def prepare_folder(path: Path) -> None:
    """Create the folder of the cache file ``path``; a file in its way is named."""
    for p in (path.parent, *path.parent.parents):
        if p.exists():
            if not p.is_dir():
                raise CacheStorageError(
                    f"request cache {path}: {p} is a file, not a folder (cache_dir must name a folder)"
                )
            break
    if not path.parent.is_dir():
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise CacheStorageError(
                f"request cache {path}: cannot create its folder {path.parent}: {err.strerror or err}"
            ) from None
    if path.is_dir():
        raise CacheStorageError(f"request cache {path} is a folder, not a cache file")


def cache_path(cache_dir: str | Path, model_id: str) -> Path:
    """The SQLite file of one model: ``<cache_dir>/<model id>.sqlite`` (id made file-name safe)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", model_id)
    return Path(cache_dir) / f"{safe}.sqlite"


class RequestCache:
    """A key -> JSON value store per result kind (``gen``, ``score``, ``probe``, ``embed`` ...).

    Thread-safe within a process (one connection behind a lock) and safe across processes (SQLite
    locking). ``path=None`` gives an in-memory cache (nothing persists). A file or folder this
    process cannot write is opened read-only (``read_only``; ``read_only=True`` asks for it): it
    serves what it holds, and storing or leasing raises ``CacheReadOnly``. Every read checks the
    entry's checksum; ``on_unverified()`` is called for each entry served without one.
    """

    def __init__(
        self,
        path: str | Path | None,
        timeout_s: float = 120.0,
        holder: Holder | None = None,
        on_unverified: Callable[[], None] | None = None,
        read_only: bool = False,
    ):
        self.path = None if path is None else Path(path)
        self.on_unverified = on_unverified
        self.unverified_served = 0
        self._read_columns = self._select = ""  # the SQL of reads: ``_prepare_reads``
        self._lock = threading.Lock()
        self.holder = holder or new_holder()
        self.lease_ttl_s = lease_ttl_s()
        self._heartbeat: threading.Thread | None = None
        self._closing = threading.Event()
        self.read_only = False
        if self.path is None:
            self._conn = sqlite3.connect(":memory:", check_same_thread=False)
        else:
            prepare_folder(self.path)
            if read_only or not writable(self.path):
                self._conn = self._open_read_only(timeout_s)
                self._prepare_reads()
                return
            try:
                self._conn = self._open(timeout_s)
            except sqlite3.Error as err:
                raise storage_error(self.path, "open it", err) from None
        self._stored(lambda: (self._conn.executescript(SCHEMA), self._conn.commit()), "create its tables")
        if "checksum" not in self._columns():
            self._stored(self._add_checksum_column, "add the checksum column to its entries")
        self._prepare_reads()

    def _columns(self) -> set[str]:
        try:
            return {row[1] for row in self._conn.execute("PRAGMA table_info(entries)")}
        except sqlite3.Error as err:
            raise storage_error(self.path or Path(":memory:"), "read its tables", err) from None

    def _prepare_reads(self) -> None:
        """The SQL of reads: the value and its checksum, NULL where the table has no such column (an
        old file opened read-only)."""
        self._read_columns = "value, checksum" if "checksum" in self._columns() else "value, NULL"
        self._select = f"SELECT {self._read_columns} FROM entries WHERE kind=? AND key=?"

    def _add_checksum_column(self) -> None:
        """Give a file written before checksums existed the column; its old entries keep none."""
        try:
            self._conn.execute("ALTER TABLE entries ADD COLUMN checksum BLOB")
            self._conn.commit()
        except sqlite3.OperationalError as err:
            if "duplicate column" not in str(err):  # another process added it just now
                raise

    def _open(self, timeout_s: float) -> sqlite3.Connection:
        """A read-write connection to the cache file, in the configured journal mode."""
        assert self.path is not None
        conn = sqlite3.connect(str(self.path), timeout=timeout_s, check_same_thread=False)
        journal = os.environ.get("THINKBIAS_CACHE_JOURNAL", "WAL").upper()
        try:
            self._retry(lambda: conn.execute(f"PRAGMA journal_mode={journal}"))
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(f"PRAGMA busy_timeout={int(timeout_s * 1000)}")
        except sqlite3.Error:
            conn.close()
            raise
        return conn

    def _open_read_only(self, timeout_s: float) -> sqlite3.Connection:
        """A read-only connection to a cache file this process cannot write: ``mode=ro``, else
        ``immutable=1`` (a WAL database in a folder that cannot hold its shared-memory file)."""
        assert self.path is not None
        if not self.path.exists():
            raise CacheReadOnly(
                f"request cache {self.path} does not exist, and its folder {self.path.parent} is read-only, "
                "so it cannot be created: nothing can be served from it or stored in it"
            )
        uri = f"file:{quote(str(self.path.resolve()))}?mode=ro"
        error: sqlite3.Error | None = None
        for suffix in ("", "&immutable=1"):
            conn = sqlite3.connect(uri + suffix, uri=True, timeout=timeout_s, check_same_thread=False)
            try:
                conn.execute("SELECT COUNT(*) FROM entries").fetchone()
            except sqlite3.Error as err:
                conn.close()
                error = err
                continue
            wal = Path(f"{self.path}-wal")
            if suffix and wal.exists() and wal.stat().st_size > 0:
                log.warning(
                    "request cache %s: opened read-only and immutable; %s holds results never checkpointed "
                    "into it, which this cannot read (open a writable copy of both files once to fold them in)",
                    self.path,
                    wal,
                )
            self.read_only = True
            log.info(
                "request cache %s is read-only for this process: serving the results it holds; a result "
                "missing from it stops the job",
                self.path,
            )
            return conn
        raise storage_error(self.path, "open it read-only", error) from None

    def _refuse(self, n: int, kind: str) -> CacheReadOnly:
        return CacheReadOnly(
            f"request cache {self.path} is read-only (this process cannot write it or its folder): {n} {kind} "
            "result(s) are not in it, and a read-only cache cannot store new ones; run with a writable "
            "cache_dir (a copy of this cache) to compute them"
        )

    def _stored(self, fn: Callable[[], T], what: str) -> T:
        """``fn()`` (a write, retried while the database is locked); a storage failure becomes a
        ``CacheStorageError`` naming the file, after the open transaction is rolled back."""
        try:
            return self._retry(fn)
        except sqlite3.Error as err:
            if getattr(self, "_conn", None) is not None:
                try:
                    self._conn.rollback()
                except sqlite3.Error:
                    pass
            raise storage_error(self.path or Path(":memory:"), what, err) from None

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
        """The stored value (decoded JSON) or None. An entry that does not match its checksum raises
        ``CacheIntegrityError``; one without a checksum (written before they existed) is served and
        counted as unverified."""
        with self._lock:
            try:
                row = self._conn.execute(self._select, (kind, key)).fetchone()
            except sqlite3.Error as err:
                raise storage_error(self.path or Path(":memory:"), f"read a {kind} result", err) from None
        return None if row is None else self._checked(kind, key, *row)

    def get_many(self, kind: str, keys: Sequence[str]) -> dict[str, Any]:
        """The stored values (decoded JSON) of those of ``keys`` the cache holds, checked as ``get``
        checks them (the first refused entry in ``keys`` order raises); one query per ``MANY`` keys,
        which costs a fraction of a query per key."""
        out: dict[str, Any] = {}
        for start in range(0, len(keys), MANY):
            chunk = keys[start : start + MANY]
            with self._lock:
                try:
                    rows = self._conn.execute(self._select_many(len(chunk)), (kind, *chunk)).fetchall()
                except sqlite3.Error as err:
                    raise storage_error(
                        self.path or Path(":memory:"), f"read {len(chunk)} {kind} results", err
                    ) from None
            found = {key: (data, checksum) for key, data, checksum in rows}
            for key in chunk:
                if key in found and key not in out:
                    out[key] = self._checked(kind, key, *found[key])
        return out

    def _select_many(self, n: int) -> str:
        return f"SELECT key, {self._read_columns} FROM entries WHERE kind=? AND key IN ({','.join('?' * n)})"

    def _checked(self, kind: str, key: str, data: str, checksum: bytes | None) -> Any:
        """The decoded value of a stored entry once its checksum matches (none: counted unverified)."""
        if checksum is None:
            self._served_unverified()
        elif checksum != entry_checksum(kind, key, data):
            raise CacheIntegrityError(self.path, kind, key)
        return json.loads(data)

    def _served_unverified(self) -> None:
        with self._lock:
            self.unverified_served += 1
            first = self.unverified_served == 1
        if first:
            log.warning(
                "request cache %s: serving entries written before entries carried a checksum; they cannot be "
                "verified and are counted as cache_unverified until stored again (%s %s checks the folder)",
                self.path,
                VERIFY_COMMAND,
                "." if self.path is None else self.path.parent,
            )
        if self.on_unverified is not None:
            self.on_unverified()

    def put(self, kind: str, key: str, value: Any) -> None:
        """Store ``value`` (JSON-serialisable) with its checksum, free this connection's lease of it,
        commit at once."""
        if self.read_only:
            raise self._refuse(1, kind)
        text = json.dumps(value, separators=(",", ":"))
        checksum = entry_checksum(kind, key, text)

        def write():
            self._conn.execute(
                "INSERT OR REPLACE INTO entries(kind, key, value, created, checksum) VALUES (?, ?, ?, ?, ?)",
                (kind, key, text, time.time(), checksum),
            )
            self._conn.execute("DELETE FROM leases WHERE kind=? AND key=? AND token=?", (kind, key, self.holder.token))
            self._conn.commit()

        with self._lock:
            self._stored(write, f"store a {kind} result")

    def count(self, kind: str | None = None) -> int:
        """Number of stored entries (of one kind, or all)."""
        with self._lock:
            if kind is None:
                return self._conn.execute("SELECT COUNT(*) FROM entries").fetchone()[0]
            return self._conn.execute("SELECT COUNT(*) FROM entries WHERE kind=?", (kind,)).fetchone()[0]

    def rows(self, batch: int = 1000) -> Iterator[tuple[str, str, str, bytes | None]]:
        """Every entry as stored: (kind, key, value text, checksum or None), in key order."""
        after = ("", "")
        while True:
            with self._lock:
                chunk = self._conn.execute(
                    f"SELECT kind, key, {self._read_columns} FROM entries WHERE (kind, key) > (?, ?) "
                    "ORDER BY kind, key LIMIT ?",
                    (*after, batch),
                ).fetchall()
            yield from chunk
            if len(chunk) < batch:
                return
            after = (chunk[-1][0], chunk[-1][1])

    def delete(self, kind: str, key: str) -> bool:
        """Remove one entry (a refused one, to have it computed again); whether it was there."""
        if self.read_only:
            raise CacheReadOnly(f"request cache {self.path} is read-only: its entries cannot be deleted")

        def remove():
            n = self._conn.execute("DELETE FROM entries WHERE kind=? AND key=?", (kind, key)).rowcount
            self._conn.commit()
            return n

        with self._lock:
            return self._stored(remove, f"delete a {kind} result") > 0

    def seal_unverified(self) -> int:
        """Give every entry without a checksum one for its value as it is now (vouching for entries
        written before checksums existed); the number sealed."""
        if self.read_only:
            raise CacheReadOnly(f"request cache {self.path} is read-only: its entries cannot be given checksums")
        rows = [(entry_checksum(k, key, v), k, key) for k, key, v, c in self.rows() if c is None]

        def seal():
            self._conn.executemany("UPDATE entries SET checksum=? WHERE kind=? AND key=? AND checksum IS NULL", rows)
            self._conn.commit()

        with self._lock:
            self._stored(seal, f"checksum {len(rows)} unverified entries")
        return len(rows)

    # -- leases -------------------------------------------------------------------------------
    def claim(self, kind: str, keys: Sequence[str]) -> Claim:
        """Lease every key that is free or whose lease expired (``lease_expired``); report the
        others with their holder. One commit for all keys."""
        if self.read_only:
            raise self._refuse(len(keys), kind)
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
            self._stored(lease, f"lease {len(keys)} {kind} request(s)")
            if out.mine and self._heartbeat is None and self.path is not None:
                self._heartbeat = threading.Thread(target=self._renew_loop, name="cache-lease-renewal", daemon=True)
                self._heartbeat.start()
        return out

    def release(self, kind: str, keys: Sequence[str]) -> None:
        """Free this connection's leases of ``keys`` (those not finished: nothing else is lost)."""
        if self.read_only:
            return  # it holds no lease

        def free():
            self._conn.executemany(
                "DELETE FROM leases WHERE kind=? AND key=? AND token=?", [(kind, k, self.holder.token) for k in keys]
            )
            self._conn.commit()

        with self._lock:
            try:
                self._stored(free, f"free {len(keys)} {kind} lease(s)")
            except CacheStorageError as err:  # on the way out of a failure: keep that one visible
                log.warning("%s; the leases expire when this process closes the cache", err)

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
                if not self.read_only:
                    self._conn.execute("DELETE FROM leases WHERE token=?", (self.holder.token,))
                    self._conn.commit()
            except sqlite3.Error:
                pass  # the leases then expire: this holder is retired below
            self._conn.close()
        retire(self.holder)
