"""Longest test files first: the order pytest-xdist hands files to its workers.

With ``--dist loadfile`` a file runs whole on one worker, so the suite's wall time is that of the
busiest worker. Starting the longest files first (largest-first scheduling) keeps one long file from
starting last and running alone. The durations come from ``tests/file_durations.json``, written by
``pytest --store-durations`` (seconds a file took, setup and teardown included); a file it does not
list yet goes first, as if it were long.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

DURATIONS = Path(__file__).with_name("file_durations.json")


def file_of(nodeid: str) -> str:
    """The test file of a node id (``tests/x/test_y.py::test_z[a]`` -> ``tests/x/test_y.py``)."""
    return nodeid.split("::", 1)[0]


def read_durations(path: Path = DURATIONS) -> dict[str, float]:
    """Seconds per test file, as last stored ({} when never stored)."""
    return json.loads(path.read_text()) if path.exists() else {}


def order_longest_first(items: list[pytest.Item], durations: dict[str, float]) -> list[pytest.Item]:
    """``items`` grouped by file, the files ordered by stored duration (unlisted files first), the
    collection order kept within a file and between files of equal duration."""
    first_seen: dict[str, int] = {}
    for item in items:
        first_seen.setdefault(file_of(item.nodeid), len(first_seen))

    def key(item: pytest.Item) -> tuple[float, int]:
        name = file_of(item.nodeid)
        return (-durations.get(name, float("inf")), first_seen[name])

    return sorted(items, key=key)


class DurationRecorder:
    """Sums each test file's setup, call and teardown durations of one session and stores them,
    merged into what was stored before (files this session did not run keep their numbers)."""

    def __init__(self, path: Path = DURATIONS) -> None:
        self.path = path
        self.seconds: dict[str, float] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        name = file_of(report.nodeid)
        self.seconds[name] = self.seconds.get(name, 0.0) + report.duration

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        stored = {**read_durations(self.path), **{k: round(v, 1) for k, v in self.seconds.items()}}
        self.path.write_text(json.dumps(dict(sorted(stored.items())), indent=1) + "\n")
