"""The endpoint is part of an API model's cache identity: the same registry id pointed at another
real local server misses the cache and asks that server, spellings of one URL share one identity,
and the keys of the local backends (llama.cpp, vLLM) are exactly those existing caches hold."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from tests.llm.api_job import run_job
from tests.llm.api_servers import ScriptedApi, api_registry, completion
from thinkbias.llm.embeddings import embed_texts
from thinkbias.llm.endpoint import api_base_url, endpoint_identity, normalised_endpoint
from thinkbias.llm.types import ModelSpec, Request, Sampling, sha256_text


def answering(text: str):
    return lambda n, headers: (200, {}, completion(text, completion_tokens=1))


def test_the_same_id_pointed_at_another_server_asks_that_server(tmp_path):
    """The registry id's ``api_base`` moved from one server to another: the rerun reached 0
    requests to the new server (the old answers were reused); now it sends all of them there."""
    cache, log, reg = tmp_path / "cache", tmp_path / "job.log", tmp_path / "models.yaml"

    def job(url: str, name: str) -> dict:
        proc = run_job(api_registry(reg, url), cache, 3, log, tmp_path / f"{name}.json")
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    with ScriptedApi(answering("A")) as first, ScriptedApi(answering("B")) as second:
        assert job(first.url, "first")["answers"] == ["A"] * 3 and len(first.received) == 3
        moved = job(second.url, "moved")
        assert moved["answers"] == ["B"] * 3 and moved["cached"] == [False] * 3
        assert len(second.received) == 3 and len(first.received) == 3
        # another spelling of the second server's URL is the same endpoint: served from the cache
        port = second.url.split(":")[2].split("/")[0]
        respelled = job(f"HTTP://127.0.0.1:{port}//v1/", "respelled")
        assert respelled["answers"] == ["B"] * 3 and respelled["cached"] == [True] * 3 and len(second.received) == 3
        back = job(first.url, "back")  # each endpoint keeps its own answers
        assert back["answers"] == ["A"] * 3 and back["cached"] == [True] * 3 and len(first.received) == 3


def test_embeddings_of_an_api_model_are_cached_per_endpoint(tmp_path):
    def vectors(value: float):
        body = {
            "object": "list",
            "model": "served",
            "data": [{"object": "embedding", "index": 0, "embedding": [value]}],
        }
        return lambda n, headers: (200, {}, body)

    spec = ModelSpec(id="api-embed", backend="openai", api_model="served", extra={"max_retries": 0})
    with ScriptedApi(vectors(1.0)) as first, ScriptedApi(vectors(2.0)) as second:
        assert embed_texts(replace(spec, api_base=first.url), ["a text"], tmp_path).tolist() == [[1.0]]
        assert embed_texts(replace(spec, api_base=second.url), ["a text"], tmp_path).tolist() == [[2.0]]
        assert embed_texts(replace(spec, api_base=first.url + "/"), ["a text"], tmp_path).tolist() == [[1.0]]
    assert (len(first.received), len(second.received)) == (1, 1)


def test_spellings_of_one_endpoint_normalise_to_one(monkeypatch):
    same = [
        "https://api.deepseek.com",
        "https://api.deepseek.com/",
        " HTTPS://API.DeepSeek.com:443/ ",
        "https://user:secret@api.deepseek.com#frag",
    ]
    assert {normalised_endpoint(u) for u in same} == {"https://api.deepseek.com"}
    assert normalised_endpoint("http://127.0.0.1:80//v1//") == "http://127.0.0.1/v1"
    assert normalised_endpoint("http://[::1]:8080/v1") == "http://[::1]:8080/v1"
    different = [
        "http://127.0.0.1:8080/v1",
        "http://127.0.0.1:8081/v1",
        "http://127.0.0.1:8080/V1",
        "https://127.0.0.1:8080/v1",
    ]
    assert len({normalised_endpoint(u) for u in different}) == 4
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    bare = ModelSpec(id="m", backend="openai")
    assert (
        api_base_url(bare) == "https://api.openai.com/v1"
        and endpoint_identity(bare) == "endpoint=https://api.openai.com/v1"
    )
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1/")  # what the openai client would use
    assert endpoint_identity(bare) == "endpoint=http://127.0.0.1:9/v1"
    assert api_base_url(replace(bare, api_base="http://h/v1")) == "http://h/v1"


def test_api_keys_carry_the_endpoint_and_local_keys_do_not():
    from thinkbias.llm.base import CachedEngine
    from thinkbias.llm.llamacpp import LlamaCppEngine
    from thinkbias.llm.openai_backend import OpenAIEngine
    from thinkbias.llm.vllm_backend import VllmEngine

    assert LlamaCppEngine._key is CachedEngine._key and VllmEngine._key is CachedEngine._key
    spec = ModelSpec(id="api-model", backend="openai", api_base="http://127.0.0.1:9/v1", api_model="served")
    engine = OpenAIEngine(spec, None)
    req = Request.chat("Q?", sampling=Sampling(max_tokens=4))
    rendered = engine.render(req)
    assert engine.gen_key(req) == sha256_text(
        "gen", "api-model", "", "endpoint=http://127.0.0.1:9/v1", rendered, req.sampling.key()
    )
    other = OpenAIEngine(replace(spec, api_base="http://127.0.0.1:10/v1"), None)
    assert other.render(req) == rendered and other.gen_key(req) != engine.gen_key(req)
    engine.close()
    other.close()


LOCAL_KEYS = {
    # computed before the endpoint entered API keys: what existing llama.cpp caches hold
    "gen": "9f5d6762ef4672b5d4351593dd524003433e6754a95c339d44017c2c5946c37c",
    "score": "54e318510a7e9975240346fe91e2d593f7526e456dd6fe10f6ce9f5bce1f8d65",
    "probe": "4f337b6162f2214b3781c9261ac0d20d171a0b3116a5d97907020cdcbe3a0be7",
}


@pytest.mark.slow
def test_llamacpp_keys_are_unchanged(engine):
    req = Request.chat("Is water wet? Answer Yes or No.", sampling=Sampling(max_tokens=8, seed=3))
    rendered = engine.render(req)
    assert engine.gen_key(req) == LOCAL_KEYS["gen"]
    assert engine.score_key(rendered, {"Yes": ["Yes"], "No": ["No"]}) == LOCAL_KEYS["score"]
    assert engine.probe_key(rendered, "a trace", [0, 2], "\nAnswer:", {"Yes": ["Yes"]}) == LOCAL_KEYS["probe"]
