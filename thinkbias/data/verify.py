"""Manifest files verified where they are read: each file against the sha256 it must have.

A pinned entry is compared with the manifest's sha256; an unpinned one (``sha256: null``) with the
``<file>.sha256`` record its first fetch wrote. The jobs that read raw data call
:func:`verify_manifest_files` before loading, so a file changed after its fetch stops the job
(naming the file, both hashes and the command that fetches it again) instead of being read. Hashes
are remembered by stat (:mod:`thinkbias.data.checksums`), so a rerun costs a ``stat`` per file.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Iterable

from thinkbias.data.checksums import SHA256_RE, normalized_sha256, require_sha256
from thinkbias.data.manifest import ManifestEntry, load_manifest

log = logging.getLogger(__name__)


class UnverifiableFile(RuntimeError):
    """A manifest file with no sha256 to compare against (unpinned and without its ``.sha256`` record)."""


def refetch_command(path: str | Path) -> str:
    """The shell command that replaces a workflow-built file by a fresh one (here: a fetch or a
    weights download; Snakemake rebuilds a missing output with the rule that makes it)."""
    return f"rm {path} && snakemake --cores 1 {path}"


def read_checksum_file(path: str | Path) -> str | None:
    """The sha256 recorded in ``<path>.sha256`` (``sha256sum`` format, either case; returned in lower
    case), or None when there is none or the record holds no sha256."""
    record = Path(path).with_name(Path(path).name + ".sha256")
    try:
        first = record.read_text(encoding="utf-8").split()
    except OSError:
        return None
    return normalized_sha256(first[0]) if first and SHA256_RE.match(first[0]) else None


def expected_sha256(entry: ManifestEntry, path: str | Path) -> str:
    """What ``path`` (the file of ``entry``) must hash to: the manifest's pin, else the record of its
    first fetch. Raises :class:`UnverifiableFile` when there is neither."""
    if entry.sha256 is not None:
        return entry.sha256
    recorded = read_checksum_file(path)
    if recorded is None:
        record = Path(path).with_name(Path(path).name + ".sha256")
        state = "holds no sha256 (64 hex digits)" if record.exists() else "is missing"
        raise UnverifiableFile(
            f"{path}: the manifest pins no sha256 for {entry.relpath} and {record.name} (written "
            f"by its first fetch) {state}, so the file cannot be verified. Fetch it with:\n"
            f"  {refetch_command(path)}\nor pin its sha256 in the manifest"
        )
    return recorded


def manifest_key(path: str | Path, root: str | Path) -> str | None:
    """``path`` relative to ``root`` as a manifest key, or None when it lies outside ``root``."""
    rel = Path(os.path.relpath(Path(path).absolute(), Path(root).absolute())).as_posix()
    return None if rel.startswith("../") or rel == ".." else rel


def verify_manifest_files(
    manifest_path: str | Path, paths: Iterable[str | Path], root: str | Path = "resources"
) -> dict[str, str]:
    """Check every path that is a manifest file (``root/<key>``) against its expected sha256
    before it is read; returns the verified sha256 per path. Paths that are not manifest files
    (a user's own benchmark file) are left as they are and logged. Raises
    :class:`~thinkbias.data.checksums.ChecksumMismatch` on the first file that differs."""
    manifest = load_manifest(manifest_path)
    verified: dict[str, str] = {}
    for path in paths:
        key = manifest_key(path, root)
        if key is None or key not in manifest:
            log.info("%s is not a file of the manifest %s: not verified", path, manifest_path)
            continue
        sha = require_sha256(path, expected_sha256(manifest[key], path), refetch_command(path))
        log.info("%s verified (sha256 %s)", path, sha)
        verified[str(path)] = sha
    return verified
