"""Check every entry of a request cache against its checksum, for whoever receives a released cache.

    python -m thinkbias.llm.cache_verify <cache folder or file>...
    python -m thinkbias.llm.cache_verify --delete KIND:KEY <cache file>   # drop a refused entry
    python -m thinkbias.llm.cache_verify --seal <cache folder or file>    # vouch for unverified entries

Prints, per cache file (``*.sqlite`` of a folder): entries, verified, unverified (stored before
entries carried a checksum) and mismatched, with the first mismatched entries as ``kind:key``.
Exit status 1 when any entry is mismatched or a file cannot be read, else 0. Checking opens every
file read-only and changes nothing. ``--delete`` removes entries so that the next run computes them
again; ``--seal`` gives every unverified entry a checksum of its value as it is now (only for a
cache whose origin you trust: from then on it is served as verified).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from thinkbias.llm.cache import CacheStorageError, RequestCache
from thinkbias.llm.cache_checksum import entry_checksum

SHOWN = 5  # mismatched entries named per file


@dataclass
class FileCheck:
    """What checking one cache file found; ``error`` says why it could not be read at all."""

    path: Path
    entries: int = 0
    verified: int = 0
    unverified: int = 0
    mismatched: list[tuple[str, str]] = field(default_factory=list)  # (kind, key)
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error and not self.mismatched

    def line(self) -> str:
        """One line of the report: the counts, then the first mismatched entries."""
        if self.error:
            return f"{self.path}: cannot be checked: {self.error}"
        text = (
            f"{self.path}: {self.entries} entries, {self.verified} verified, {self.unverified} unverified, "
            f"{len(self.mismatched)} mismatched"
        )
        if self.mismatched:
            named = ", ".join(f"{kind}:{key}" for kind, key in self.mismatched[:SHOWN])
            more = f" and {len(self.mismatched) - SHOWN} more" if len(self.mismatched) > SHOWN else ""
            text += f": {named}{more}"
        return text


def check_file(path: str | Path) -> FileCheck:
    """Every entry of the cache file ``path`` against its checksum (opened read-only)."""
    out = FileCheck(Path(path))
    if not out.path.is_file():
        out.error = "no such file"
        return out
    try:
        cache = RequestCache(out.path, read_only=True)
    except CacheStorageError as err:
        out.error = str(err)
        return out
    try:
        for kind, key, value, checksum in cache.rows():
            out.entries += 1
            if checksum is None:
                out.unverified += 1
            elif checksum == entry_checksum(kind, key, value):
                out.verified += 1
            else:
                out.mismatched.append((kind, key))
    except Exception as err:  # noqa: BLE001 - a file that fails half-way is reported, the others still checked
        out.error = f"{type(err).__name__}: {err}"
    finally:
        cache.close()
    return out


def cache_files(paths: Sequence[str | Path]) -> list[Path]:
    """The cache files named: a folder stands for its ``*.sqlite`` files."""
    files: list[Path] = []
    for p in map(Path, paths):
        files += sorted(p.glob("*.sqlite")) if p.is_dir() else [p]
    return files


def delete_entries(path: Path, entries: Sequence[str]) -> list[str]:
    """Remove each ``kind:key`` entry from the cache file ``path``; one report line per entry."""
    cache = RequestCache(path)
    lines = []
    try:
        for entry in entries:
            kind, _, key = entry.partition(":")
            gone = cache.delete(kind, key)
            lines.append(f"{path}: {entry} " + ("deleted; the next run computes it again" if gone else "not found"))
    finally:
        cache.close()
    return lines


def seal_file(path: Path) -> str:
    """Give the unverified entries of ``path`` checksums of their values as they are now."""
    cache = RequestCache(path)
    try:
        n = cache.seal_unverified()
    finally:
        cache.close()
    return f"{path}: {n} unverified entries given a checksum"


def main(argv: Sequence[str] | None = None) -> int:
    """Check (or ``--delete`` from, or ``--seal``) the cache files named; the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m thinkbias.llm.cache_verify",
        description="Check every request-cache entry against its checksum (exit 1 on any mismatch).",
    )
    parser.add_argument("paths", nargs="+", help="cache folders (their *.sqlite files) or cache files")
    parser.add_argument("--delete", action="append", default=[], metavar="KIND:KEY", help="remove this entry")
    parser.add_argument("--seal", action="store_true", help="give unverified entries a checksum of their value now")
    args = parser.parse_args(argv)
    files = cache_files(args.paths)
    missing = [str(f) for f in files if not f.is_file()]
    if (args.delete or args.seal) and missing:
        parser.error(f"no such cache file: {', '.join(missing)}")
    try:
        if args.delete:
            if len(files) != 1:
                parser.error("--delete takes exactly one cache file")
            print("\n".join(delete_entries(files[0], args.delete)))
            return 0
        if args.seal:
            print("\n".join(seal_file(f) for f in files))
            return 0
    except CacheStorageError as err:
        print(err, file=sys.stderr)
        return 1
    if not files:
        print(f"no cache files (*.sqlite) in {', '.join(args.paths)}", file=sys.stderr)
        return 1
    checks = [check_file(f) for f in files]
    for check in checks:
        print(check.line())
    bad = [c for c in checks if not c.ok]
    total = sum(len(c.mismatched) for c in checks)
    print(
        f"{len(checks)} file(s): {sum(c.entries for c in checks)} entries, {sum(c.verified for c in checks)} verified, "
        f"{sum(c.unverified for c in checks)} unverified, {total} mismatched"
        + (f"; {len(bad)} file(s) failed the check" if bad else "")
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
