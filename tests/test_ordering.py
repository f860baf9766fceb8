"""The order test files start in (longest stored duration first) and how durations are stored."""

import json
from types import SimpleNamespace

from tests.ordering import DurationRecorder, order_longest_first, read_durations


def _items(*nodeids: str) -> list[SimpleNamespace]:
    return [SimpleNamespace(nodeid=n) for n in nodeids]


def test_files_start_longest_first_with_unlisted_files_before_all_and_tests_kept_in_order():
    items = _items("a.py::t1", "b.py::t1", "a.py::t2", "c.py::t1", "d.py::t1", "b.py::t2", "e.py::t1")
    durations = {"a.py": 5.0, "b.py": 60.0, "c.py": 5.0, "e.py": 0.1}  # d.py never timed
    ordered = [i.nodeid for i in order_longest_first(items, durations)]
    assert ordered == ["d.py::t1", "b.py::t1", "b.py::t2", "a.py::t1", "a.py::t2", "c.py::t1", "e.py::t1"]


def test_no_stored_durations_keeps_the_collection_order_by_file():
    items = _items("a.py::t1", "b.py::t1", "a.py::t2")
    assert [i.nodeid for i in order_longest_first(items, {})] == ["a.py::t1", "a.py::t2", "b.py::t1"]


def test_recorder_sums_setup_call_and_teardown_per_file_and_keeps_other_files(tmp_path):
    path = tmp_path / "durations.json"
    path.write_text(json.dumps({"old.py": 7.0, "a.py": 99.0}))
    rec = DurationRecorder(path)
    for nodeid, seconds in (("a.py::t1", 1.25), ("a.py::t1", 2.0), ("a.py::t2", 0.5), ("b.py::t", 3.0)):
        rec.pytest_runtest_logreport(SimpleNamespace(nodeid=nodeid, duration=seconds))
    rec.pytest_sessionfinish(None)
    assert read_durations(path) == {"a.py": 3.8, "b.py": 3.0, "old.py": 7.0}
    assert read_durations(tmp_path / "missing.json") == {}
