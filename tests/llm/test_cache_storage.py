"""The request cache on storage that fails: a cache folder that is a file, a complete cache on a
read-only file system (a read-only bind mount: it stops root's writes, which ``chmod`` does not),
and a full disk (a small tmpfs). Every error names the cache file; a read-only complete cache
serves every result it holds, to a job process and to each study's entry point, and only a result
missing from it fails, saying that the cache is read-only."""

from __future__ import annotations

import json
import logging

import pandas as pd
import pytest

from tests.llm.api_job import run_job
from tests.llm.api_servers import ScriptedApi, api_registry, completion
from tests.llm.mounts import fill, read_only_view, small_tmpfs
from tests.llm.test_study_retries import blindspot_job, fairness_job, position_job
from thinkbias.llm import open_engine
from thinkbias.llm.cache import CacheReadOnly, CacheStorageError, RequestCache, cache_path
from thinkbias.llm.types import ModelSpec
from thinkbias.workflow import rule_logging

API = ModelSpec(id="api-model", backend="openai", api_base="http://127.0.0.1:9/v1", api_model="served")


def answer_yes(n, headers):
    return 200, {}, completion("Yes.", completion_tokens=2)


def test_a_cache_folder_that_is_a_file_is_named(tmp_path):
    """``cache_dir`` naming a file gave a raw ``FileExistsError``."""
    not_a_folder = tmp_path / "cache"
    not_a_folder.write_text("a file where the cache folder should be")
    with pytest.raises(CacheStorageError) as info:
        open_engine(API, not_a_folder)
    assert str(info.value) == (
        f"request cache {not_a_folder / 'api-model.sqlite'}: {not_a_folder} is a file, not a folder "
        "(cache_dir must name a folder)"
    )
    with pytest.raises(CacheStorageError, match=f"{not_a_folder} is a file, not a folder"):
        RequestCache(cache_path(not_a_folder / "deeper", "m"))
    (tmp_path / "dir.sqlite").mkdir()
    with pytest.raises(CacheStorageError, match="dir.sqlite is a folder, not a cache file"):
        RequestCache(tmp_path / "dir.sqlite")


def test_a_complete_cache_on_a_read_only_file_system_serves_a_job_and_only_a_miss_fails(tmp_path):
    """A released cache mounted read-only: the rerun of a job is served from it (no request reaches
    the server; it could not be opened: "unable to open database file"); a job needing one more
    result fails before sending it, naming the file and saying that the cache is read-only."""
    cache, log = tmp_path / "cache", tmp_path / "job.log"
    with ScriptedApi(answer_yes) as api:
        reg = api_registry(tmp_path / "models.yaml", api.url)
        first = run_job(reg, cache, 4, log, tmp_path / "first.json")
        assert first.returncode == 0, first.stderr
        assert len(api.received) == 4
        stored = cache_path(cache, "scripted-api").read_bytes()
        with read_only_view(cache, tmp_path / "released") as released:
            with pytest.raises(OSError, match="Read-only file system"):
                (released / "probe").write_text("x")  # a real read-only file system, for root too
            rerun = run_job(reg, released, 4, log, tmp_path / "rerun.json")
            assert rerun.returncode == 0, rerun.stderr
            out = json.loads(rerun.stdout)
            assert out["answers"] == ["Yes."] * 4 and out["cached"] == [True] * 4 and len(api.received) == 4
            more = run_job(reg, released, 5, log, tmp_path / "more.json")
            assert more.returncode != 0 and len(api.received) == 4
            path = released / "scripted-api.sqlite"
            assert (
                f"CacheReadOnly: request cache {path} is read-only (this process cannot write it or its folder): "
                "1 gen result(s) are not in it" in log.read_text()
            )
        assert cache_path(cache, "scripted-api").read_bytes() == stored
        assert json.loads(first.stdout)["answers"] == out["answers"]


def test_a_read_only_cache_reads_and_refuses_writes_with_the_path(tmp_path):
    cache = RequestCache(tmp_path / "c" / "m.sqlite")
    cache.put("gen", "k", {"text": "stored"})
    cache.close()
    with read_only_view(tmp_path / "c", tmp_path / "ro") as ro:
        reader = RequestCache(ro / "m.sqlite")
        assert reader.read_only and reader.get("gen", "k") == {"text": "stored"} and reader.count() == 1
        with pytest.raises(CacheReadOnly, match=f"request cache {ro / 'm.sqlite'} is read-only"):
            reader.put("score", "k2", [1])
        with pytest.raises(CacheReadOnly, match="2 gen result"):
            reader.claim("gen", ["a", "b"])
        reader.close()
        with pytest.raises(CacheReadOnly, match=f"request cache {ro / 'n.sqlite'} does not exist, and its folder"):
            RequestCache(ro / "n.sqlite")


@pytest.mark.parametrize(
    "study_job", [fairness_job, position_job, blindspot_job], ids=["fairness", "position", "blindspot"]
)
def test_each_study_reruns_on_a_read_only_complete_cache(study_job, tmp_path):
    """Each study's model calls, rerun on their complete cache mounted read-only: every result is
    served from it, nothing is sent, and the closing line says so."""
    with ScriptedApi(answer_yes) as api:
        reg = api_registry(tmp_path / "models.yaml", api.url)
        with rule_logging(tmp_path / "first.log") as logger:
            study_job(reg, str(tmp_path / "cache"), logger)
        sent = len(api.received)
        assert sent >= 1
        with read_only_view(tmp_path / "cache", tmp_path / "released") as released:
            with rule_logging(tmp_path / "rerun.log") as logger:
                study_job(reg, str(released), logger)
    assert len(api.received) == sent
    assert f"finished, generated_tokens=0 cached={sent} retries=0" in (tmp_path / "rerun.log").read_text()


@pytest.mark.slow
def test_the_fairness_arms_with_fused_probes_rerun_from_a_read_only_cache(spec, tmp_path):
    """The embedded model's fairness arms (think with fused probes and force-closed follow-ups,
    nothink with scores) on a complete read-only cache: identical tables, nothing evaluated."""
    from thinkbias.fairness.generation import generate_and_probe_arm

    prompts = pd.DataFrame(
        [
            {"dataset": "adult", "pair_id": "p0", "side": s, "attribute": "sex", "user": f"Does the {s} earn more?"}
            for s in ("a", "b")
        ]
    )
    logger = logging.getLogger("thinkbias.test")

    def arms(cache_dir):
        with open_engine(spec, cache_dir, n_threads=1) as engine:
            out = [generate_and_probe_arm(engine, prompts, arm, 12, 4, [2], logger) for arm in ("think", "nothink")]
            return out, engine.stats

    first, made = arms(tmp_path / "cache")
    assert made.generated_tokens > 0
    with read_only_view(tmp_path / "cache", tmp_path / "released") as released:
        again, stats = arms(released)
    assert (stats.generated_tokens, stats.prompt_tokens, stats.probe_tokens) == (0, 0, 0)
    for (gens, probes), (gens2, probes2) in zip(first, again):
        pd.testing.assert_frame_equal(gens, gens2)
        values = [c for c in probes.columns if "token" not in c]  # what this run evaluated differs
        pd.testing.assert_frame_equal(probes[values], probes2[values])


def test_a_full_disk_names_the_cache_file_and_keeps_what_was_stored(tmp_path):
    """A full disk gave a raw "disk I/O error"; now the error names the file and the disk, and
    every result committed before it is intact."""
    with small_tmpfs(tmp_path / "disk", "512k") as disk:
        path = disk / "cache" / "m.sqlite"
        cache = RequestCache(path)
        for i in range(10):
            cache.put("gen", f"k{i}", {"text": "x" * 1000, "i": i})
        filler = fill(disk)
        with pytest.raises(CacheStorageError) as info:
            for i in range(10, 1000):
                cache.put("gen", f"k{i}", {"text": "y" * 4000, "i": i})
        stored = i
        msg = str(info.value)
        assert msg.startswith(f"request cache {path}: cannot store a gen result: ")
        assert f"is the disk holding {path.parent} full?" in msg and "the results stored before are intact" in msg
        cache.close()
        with pytest.raises(CacheStorageError, match=f"request cache {disk / 'cache' / 'other.sqlite'}: cannot"):
            RequestCache(disk / "cache" / "other.sqlite")  # no room for a new cache either
        filler.unlink()
        again = RequestCache(path)
        assert again.count("gen") == stored and again.get("gen", f"k{stored - 1}")["i"] == stored - 1
        assert again._conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        again.close()


def test_an_unreadable_cache_file_is_named(tmp_path):
    path = tmp_path / "m.sqlite"
    path.write_bytes(b"not a database" * 100)
    with pytest.raises(CacheStorageError, match=f"request cache {path}: cannot open it: file is not a database"):
        RequestCache(path)
