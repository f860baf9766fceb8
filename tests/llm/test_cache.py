import multiprocessing as mp

from thinkbias.llm.cache import RequestCache, cache_path


def _writer(path, start, n):
    c = RequestCache(path)
    for i in range(start, start + n):
        c.put("gen", f"k{i}", {"i": i, "text": "x" * 200})
    c.close()


def test_roundtrip_and_persistence(tmp_path):
    path = cache_path(tmp_path, "org/model:v1")
    assert path.name == "org_model_v1.sqlite"
    c = RequestCache(path)
    assert c.get("gen", "a") is None
    c.put("gen", "a", {"text": "hi", "n": 3})
    c.put("score", "a", [1, 2])
    c.close()
    c2 = RequestCache(path)
    assert c2.get("gen", "a") == {"text": "hi", "n": 3}
    assert c2.get("score", "a") == [1, 2]
    assert c2.count() == 2 and c2.count("gen") == 1
    c2.close()


def test_concurrent_processes_do_not_corrupt(tmp_path):
    path = tmp_path / "m.sqlite"
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(path), k * 100, 60)) for k in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    c = RequestCache(path)
    assert c.count("gen") == 180
    assert c.get("gen", "k259") == {"i": 259, "text": "x" * 200}
    assert c._conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    c.close()
