"""Real file systems for the cache's storage tests: a read-only view of a folder (a read-only bind
mount, which stops writes for root too, unlike ``chmod``) and a small tmpfs that fills up. Both
need mount privileges; a test without them is skipped, saying why."""

from __future__ import annotations

import contextlib
import subprocess
from pathlib import Path
from typing import Iterator

import pytest


def _mount(*args: str) -> None:
    proc = subprocess.run(["mount", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount here (mount {' '.join(args)}: {proc.stderr.strip()})")


def _unmount(path: Path) -> None:
    if subprocess.run(["umount", str(path)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


@contextlib.contextmanager
def read_only_view(folder: Path, at: Path) -> Iterator[Path]:
    """``folder`` seen read-only at ``at`` (a bind mount remounted ``ro``), unmounted on exit."""
    at.mkdir(parents=True, exist_ok=True)
    _mount("--bind", str(folder), str(at))
    try:
        proc = subprocess.run(["mount", "-o", "remount,bind,ro", str(at)], capture_output=True, text=True)
        if proc.returncode != 0:
            pytest.skip(f"cannot remount read-only here: {proc.stderr.strip()}")
        yield at
    finally:
        _unmount(at)


@contextlib.contextmanager
def small_tmpfs(at: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (e.g. ``"512k"``) mounted at ``at``, unmounted on exit."""
    at.mkdir(parents=True, exist_ok=True)
    _mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(at))
    try:
        yield at
    finally:
        _unmount(at)


def fill(folder: Path) -> Path:
    """Write a file in ``folder`` until its file system has no space left; returns that file."""
    filler = folder / "filler"
    with open(filler, "wb", buffering=0) as fh:
        try:
            while fh.write(b"\0" * 4096):
                pass
        except OSError:  # ENOSPC
            pass
    return filler
