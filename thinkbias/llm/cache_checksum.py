"""The checksum each request-cache entry carries: sha256 of its kind, key and stored value.

It is written in the same transaction as the entry and checked on every read, so an entry changed
on disk after it was written (edited, or damaged in a way SQLite's own checks miss) is refused
instead of served. A plain hash detects edits and damage; it does not stop a deliberate forger, who
can recompute it. Entries written before checksums existed have none: they are served as
*unverified* and counted.
"""

from __future__ import annotations

import hashlib
import shlex
from pathlib import Path

VERIFY_COMMAND = "python -m thinkbias.llm.cache_verify"


def entry_checksum(kind: str, key: str, value: str | bytes) -> bytes:
    """sha256 digest (32 bytes) of ``kind``, ``key`` and the stored JSON text ``value``, NUL-separated
    (JSON escapes NUL, a kind or hex key holds none, so the parts cannot run into each other)."""
    h = hashlib.sha256(f"{kind}\0{key}\0".encode())
    h.update(value if isinstance(value, bytes) else value.encode())
    return h.digest()


def short_key(key: str, n: int = 16) -> str:
    """The first ``n`` characters of a key (keys are sha256 hex digests of the request)."""
    return key if len(key) <= n + 1 else f"{key[:n]}…"


def mismatch_message(path: Path | None, kind: str, key: str, request: str = "") -> str:
    """What a refused entry says: the file, the entry's kind and key, the request it answers when
    known, and what to do."""
    where = ":memory:" if path is None else str(path)
    asked = f" (request: {request})" if request else ""
    delete = f"{VERIFY_COMMAND} --delete {kind}:{key} {shlex.quote(where)}"
    return (
        f"request cache {where}: refused the stored {kind} result of key {short_key(key)}{asked}: it does not "
        "match its checksum, so it was changed after it was written (edited, or damaged on disk). It is not "
        "served, and it will not be requested again silently. Restore the file from its source (the released "
        f"cache, a backup), or delete the entry so that the next run computes it again: {delete}; "
        f"{VERIFY_COMMAND} {shlex.quote(str(Path(where).parent))} lists every such entry of the folder"
    )
