"""sha256 of files, remembered by stat so that a file is hashed once and re-hashed only when it changes.

:func:`verified_sha256` keeps a sidecar beside each file it hashes (``.<name>.verified``, JSON)
holding the file's stat (size, mtime_ns, ctime_ns, inode) and the sha256 computed for it. While the
stat is the same the sidecar's sha256 is returned without reading the file; any write, ``touch``,
copy or replacement changes the stat and the file is hashed again. ctime cannot be set from user
space, so even a file rewritten in place with its old mtime restored (``touch -r``) is re-hashed.
The sidecar only caches a computed hash; it never says what a file *should* hash to: callers
compare with the manifest, the registry or a download record (:func:`require_sha256`).

Hashes are compared case-insensitively: a sha256 is 64 hex digits in either case (``sha256sum``
prints lower case, PowerShell's ``Get-FileHash`` upper case); :func:`normalized_sha256` gives the
lower-case form every record and cache identity uses.

File times have a coarse tick (a few ms on ext4, 2 s on FAT), so a file written again within the
tick of its last write could keep its stat. As git does for its index, a hash taken less than
``RACY_NS`` after the file's mtime is not trusted: the file is hashed once more on its next use
(by then the hash is older than the tick and is kept).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
import time
from pathlib import Path

log = logging.getLogger(__name__)

CHUNK = 1 << 20
SIDECAR_SUFFIX = ".verified"
RACY_NS = 2_000_000_000
# a sha256 as the manifest, the registry and download records may write it (either case)
SHA256_PATTERN = "^[0-9a-fA-F]{64}$"
SHA256_RE = re.compile(SHA256_PATTERN)


def is_sha256(value: object) -> bool:
    """True when ``value`` is a sha256 written as 64 hex digits (either case)."""
    return isinstance(value, str) and SHA256_RE.match(value) is not None


def normalized_sha256(value: str) -> str:
    """``value`` in the lower-case form ``hashlib`` and ``sha256sum`` print (surrounding spaces dropped)."""
    return value.strip().lower()


def same_sha256(a: str, b: str) -> bool:
    """True when ``a`` and ``b`` are the same hash, whatever the case of their hex digits."""
    return normalized_sha256(a) == normalized_sha256(b)


def malformed_sha256(value: object) -> str:
    """Why ``value`` is not a sha256 (its length, or its first character that is not a hex digit)."""
    if not isinstance(value, str):
        return f"{type(value).__name__} {value!r}, not text"
    bad = next((c for c in value if c not in "0123456789abcdefABCDEF"), None)
    if len(value) != 64:
        return f"{len(value)} characters, a sha256 is 64 hex digits"
    return f"{bad!r} is not a hex digit"


class ChecksumMismatch(RuntimeError):
    """A file's sha256 differs from the one it must have; the message names the file, both hashes
    and the command that restores it."""

    def __init__(self, path: str | Path, expected: str, actual: str, refetch: str, what: str = "file"):
        self.path, self.expected, self.actual, self.refetch = str(path), expected, actual, refetch
        super().__init__(
            f"{what} {path} does not have its expected sha256:\n"
            f"  expected sha256 {expected}\n"
            f"  actual   sha256 {actual}\n"
            f"It changed after it was fetched (or the fetch was incomplete); it was not used. "
            f"Fetch it again with:\n  {refetch}"
        )


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks (always reads the whole file)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def sidecar_path(path: str | Path) -> Path:
    """Where the remembered hash of ``path`` is kept: ``.<name>.verified`` beside the real file."""
    real = Path(path).resolve()
    return real.with_name(f".{real.name}{SIDECAR_SUFFIX}")


def stat_key(path: str | Path) -> dict[str, int]:
    """The stat fields that identify one version of a file's content."""
    st = os.stat(path)
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns, "inode": st.st_ino}


def remembered_sha256(path: str | Path) -> str | None:
    """The sidecar's sha256 when it was computed for the file as it is now (same stat, and not
    within ``RACY_NS`` of the file's mtime), else None."""
    sidecar = sidecar_path(path)
    try:
        record = json.loads(sidecar.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("stat") != stat_key(path):
        return None
    hashed_ns = record.get("hashed_ns")
    if not isinstance(hashed_ns, int) or hashed_ns - record["stat"]["mtime_ns"] < RACY_NS:
        return None
    sha = record.get("sha256")
    return sha if isinstance(sha, str) and len(sha) == 64 else None


def _remember(path: Path, stat: dict[str, int], sha256: str, hashed_ns: int) -> None:
    sidecar = sidecar_path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f"{sidecar.name}.", suffix=".tmp", dir=sidecar.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"stat": stat, "sha256": sha256, "hashed_ns": hashed_ns}, fh)
        os.replace(tmp, sidecar)
    except OSError as exc:  # a read-only folder: the file is simply hashed again next time
        log.warning("could not write %s (%s): %s will be hashed again on its next use", sidecar, exc, path)


def remember_sha256(path: str | Path, sha256: str) -> None:
    """Record ``sha256`` as the hash of ``path`` as it is now; only for a caller that has just
    hashed these very bytes (a download moved into place after its check), to spare a re-read."""
    _remember(Path(path), stat_key(path), sha256, time.time_ns())


def verified_sha256(path: str | Path) -> str:
    """sha256 of ``path``: from its sidecar when the file's stat is unchanged since it was hashed,
    else computed (and remembered, unless the file changed while it was being read)."""
    path = Path(path)
    started_ns = time.time_ns()
    before = stat_key(path)
    known = remembered_sha256(path)
    if known is not None:
        return known
    sha256 = sha256_file(path)
    if stat_key(path) == before:
        _remember(path, before, sha256, started_ns)
    return sha256


def require_sha256(path: str | Path, expected: str, refetch: str, what: str = "file") -> str:
    """``path``'s sha256 (see :func:`verified_sha256`) when it equals ``expected``; otherwise raise
    :class:`ChecksumMismatch` naming the file, both hashes and the ``refetch`` command. The case of
    ``expected``'s hex digits does not matter; a malformed ``expected`` raises ``ValueError`` before
    the file is read (callers that know where the value was written refuse it first, naming that)."""
    if not is_sha256(expected):
        raise ValueError(
            f"{what} {path}: the sha256 it must have, {expected!r}, is malformed ({malformed_sha256(expected)}); "
            f"the file was not compared"
        )
    actual = verified_sha256(path)
    if not same_sha256(actual, expected):
        raise ChecksumMismatch(path, expected, actual, refetch, what)
    return actual
