"""The openai backend: pure request building, and real runs against llama-cpp-python's own
OpenAI-compatible server on localhost serving the embedded model (including a server crash)."""

from __future__ import annotations

import json
import logging
import random
import re
import socket
import subprocess
import sys
import threading
import time
from dataclasses import replace

import pytest
from openai.types.chat import ChatCompletion

from thinkbias.llm import open_engine
from thinkbias.llm.cache import cache_path
from tests.llm.api_servers import HangingServer, ScriptedApi, completion
from thinkbias.llm.openai_backend import (
    ApiRetriesExhausted,
    RetryPolicy,
    backoff_delay,
    chat_kwargs,
    generation_from_response,
    with_retries,
)
from thinkbias.llm.run import run_requests
from thinkbias.llm.types import YES_NO, ModelSpec, Request, Sampling

API = ModelSpec(
    id="api-model",
    backend="openai",
    api_base="http://127.0.0.1:9/v1",
    api_model="served",
    extra={"max_retries": 2, "backoff_s": 0.01},
)
API_DEFAULTS = replace(API, extra={})
SECRET = "sk-test-secret-value-123"


def test_chat_kwargs_carry_explicit_sampling():
    req = Request.chat(
        "Q?", system="S", sampling=Sampling(temperature=0.6, top_p=0.9, seed=7, max_tokens=33, stop=("\n\n",))
    )
    kw = chat_kwargs(API, req)
    assert kw == {
        "model": "served",
        "messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "Q?"}],
        "max_tokens": 33,
        "seed": 7,
        "temperature": 0.6,
        "top_p": 0.9,
        "stop": ["\n\n"],
    }
    reasoning = replace(API, extra={"token_param": "max_completion_tokens", "send_sampling": False})
    kw = chat_kwargs(reasoning, req)
    assert kw["max_completion_tokens"] == 33 and "temperature" not in kw and "max_tokens" not in kw
    with pytest.raises(ValueError, match="cannot pre-fill"):
        chat_kwargs(API, Request.chat("Q", prefill="<think>\n"))
    o3 = replace(API, api_base="https://api.openai.com/v1", api_model="o3-2025-04-16", extra={})
    kw = chat_kwargs(o3, req)
    assert kw["max_completion_tokens"] == 33 and "temperature" not in kw and "top_p" not in kw
    routed = replace(API, extra={"provider": {"order": ["x"]}})
    assert chat_kwargs(routed, req)["extra_body"] == {"provider": {"order": ["x"]}}
    prefix = replace(API, extra={"prefill": "assistant_prefix"})
    assert chat_kwargs(prefix, Request.chat("Q", prefill="Answer:"))["messages"][-1] == {
        "role": "assistant",
        "content": "Answer:",
        "prefix": True,
    }


def test_reasoning_content_becomes_thinking():
    resp = ChatCompletion.model_validate(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "deepseek-reasoner",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "Yes", "reasoning_content": "Think about income."},
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 8, "total_tokens": 18},
        }
    )
    g = generation_from_response(API, Request.chat("Q"), resp)
    assert (g.thinking, g.answer, g.completion_tokens, g.finish_reason) == ("Think about income.", "Yes", 8, "stop")
    plain = ChatCompletion.model_validate(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "finish_reason": "length", "message": {"role": "assistant", "content": "No."}}],
        }
    )
    g = generation_from_response(API, Request.chat("Q"), plain)
    assert (g.thinking, g.answer, g.text) == ("", "No.", "No.")


def test_backoff_grows_exponentially_with_jitter_and_cap():
    rng = random.Random(0)
    d = [backoff_delay(a, 1.0, 10.0, rng) for a in range(6)]
    for a, x in enumerate(d):
        top = min(10.0, 2**a)
        assert top / 2 <= x <= top


def test_retries_exhausted_error_names_model_and_url_not_key(monkeypatch):
    monkeypatch.setenv("THINKBIAS_TEST_KEY", SECRET)
    spec = replace(API, api_key_env="THINKBIAS_TEST_KEY", extra={"max_retries": 2, "backoff_s": 0.01, "timeout_s": 2})
    eng = open_engine(spec, None)
    with pytest.raises(ApiRetriesExhausted) as info:
        eng.generate([Request.chat("Hi", sampling=Sampling(max_tokens=4))])
    msg = str(info.value)
    assert "api-model" in msg and "127.0.0.1:9" in msg and "3 attempts" in msg and SECRET not in msg
    assert eng.stats.requests == 3 and eng.stats.retries == 2


def test_default_policy_bounds_a_request_at_twenty_minutes():
    """The defaults: 10 min per attempt, 6 retries, 20 min for the whole request (a hung server
    used to take 7 attempts x 600 s = 70 min); every key is configurable under ``extra``."""
    policy = RetryPolicy.of(API_DEFAULTS)
    assert (policy.timeout_s, policy.max_retries, policy.retry_budget_s) == (600.0, 6, 1200.0)
    custom = RetryPolicy.of(replace(API_DEFAULTS, extra={"timeout_s": "30", "retry_budget_s": 90, "max_retries": 0}))
    assert (custom.timeout_s, custom.retry_budget_s, custom.max_retries) == (30.0, 90.0, 0)
    with pytest.raises(ValueError, match="extra.retry_budget_s = 'soon' must be a positive number"):
        RetryPolicy.of(replace(API_DEFAULTS, extra={"retry_budget_s": "soon"}))


def test_hung_server_fails_within_the_budget_naming_model_url_and_attempts(caplog):
    """A server that accepts connections and never answers: with timeout_s 0.6 and a 2 s budget
    the request fails after about 2 s (not max_retries x timeout_s), the message says why."""
    with HangingServer() as hung:
        spec = replace(
            API,
            api_base=hung.url,
            extra={"timeout_s": 0.6, "retry_budget_s": 2.0, "max_retries": 10, "backoff_s": 0.05, "backoff_max_s": 0.1},
        )
        eng = open_engine(spec, None)
        start = time.monotonic()
        with caplog.at_level(logging.INFO, logger="thinkbias"), pytest.raises(ApiRetriesExhausted) as info:
            eng.generate([Request.chat("Hi", sampling=Sampling(max_tokens=4))])
        elapsed = time.monotonic() - start
        eng.close()
    msg = str(info.value)
    attempts = eng.stats.requests
    assert 1.4 <= elapsed < 3.0, elapsed
    assert 3 <= attempts <= 5 and len(hung.accepted) == attempts
    assert f"model 'api-model' (served) at {hung.url}: {attempts} attempts in " in msg
    assert "extra.retry_budget_s 2" in msg and re.search(r"no reply within \d\.\d s \(timeout\)", msg), msg
    waits = [r.message for r in caplog.records if "retrying in" in r.message]
    assert len(waits) == attempts - 1 and eng.stats.retries == attempts - 1


def test_retry_after_is_honoured_and_retries_are_counted_and_logged(tmp_path, caplog):
    """429 then 503, each with ``Retry-After: 1``, then a reply: two retries, each after the full
    second the server asked for (the backoff alone would wait 10 ms), both logged, and the job's
    closing line counts them."""
    script = [
        (429, {"Retry-After": "1"}, {"error": {"message": "slow down"}}),
        (503, {"Retry-After": "1"}, {"error": {"message": "overloaded"}}),
    ]

    def respond(n, headers):
        return script[n] if n < len(script) else (200, {}, completion("Yes", completion_tokens=2))

    logger = logging.getLogger("thinkbias.test")
    with ScriptedApi(respond) as api, open_engine(replace(API, api_base=api.url), tmp_path) as eng:
        with caplog.at_level(logging.INFO, logger="thinkbias"):
            [gen] = run_requests(eng, [Request.chat("Hi", sampling=Sampling(max_tokens=4))], logger)
    assert gen.answer == "Yes" and len(api.received) == 3
    gaps = [b - a for a, b in zip(api.times, api.times[1:])]
    assert all(g >= 0.95 for g in gaps), gaps
    assert eng.stats.retries == 2 and eng.stats.requests == 3 and 1.9 <= eng.stats.retry_wait_s <= 2.1
    waits = [r.message for r in caplog.records if "retrying in" in r.message]
    assert len(waits) == 2 and "HTTP 429" in waits[0] and "HTTP 503" in waits[1]
    assert all("retrying in 1.0 s (Retry-After)" in w and api.url in w for w in waits)
    assert caplog.records[-1].message == "generate: finished, generated_tokens=2 cached=0 retries=2 retry_wait_s=2.0"


def test_retry_after_past_the_budget_stops_at_once():
    with ScriptedApi(lambda n, h: (429, {"Retry-After": "30"}, {"error": {"message": "quota"}})) as api:
        spec = replace(API, api_base=api.url, extra={"retry_budget_s": 5, "max_retries": 4})
        start = time.monotonic()
        with pytest.raises(ApiRetriesExhausted, match="1 attempts in .* HTTP 429"):
            open_engine(spec, None).generate([Request.chat("Hi", sampling=Sampling(max_tokens=4))])
    assert time.monotonic() - start < 2 and len(api.received) == 1


def test_missing_key_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("THINKBIAS_ABSENT_KEY", raising=False)
    with pytest.raises(RuntimeError, match="THINKBIAS_ABSENT_KEY is not set"):
        open_engine(replace(API, api_key_env="THINKBIAS_ABSENT_KEY"), None)


def test_a_key_variable_set_but_empty_is_said_to_be_empty(monkeypatch):
    """It was reported as not set, which sends one looking for a missing export."""
    monkeypatch.setenv("THINKBIAS_EMPTY_KEY", "")
    with pytest.raises(RuntimeError, match="environment variable THINKBIAS_EMPTY_KEY is set but empty"):
        open_engine(replace(API, api_key_env="THINKBIAS_EMPTY_KEY"), None)


def test_non_retryable_errors_raise_at_once():
    calls = []

    def bad(timeout):
        calls.append(1)
        raise KeyError("boom")

    with pytest.raises(KeyError):
        with_retries(API, bad)
    assert len(calls) == 1


# -- against a real local server -----------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalServer:
    """llama-cpp-python's server (``thinkbias.llm.llamacpp_server``) on the embedded model; stop() and
    start() simulate a crash."""

    def __init__(self, model: str, port: int):
        self.model, self.port, self.proc = model, port, None

    def start(self, timeout: float = 120) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "thinkbias.llm.llamacpp_server",
                "--model",
                self.model,
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--n_ctx",
                "1024",
                "--n_threads",
                "1",
                "--chat_format",
                "chatml",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return
            except OSError:
                assert self.proc.poll() is None, "server exited"
                time.sleep(0.2)
        raise TimeoutError("server did not start")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def server(spec):
    srv = LocalServer(spec.weights, free_port())
    srv.start()
    yield srv
    srv.stop()


def local_spec(server, **extra) -> ModelSpec:
    return ModelSpec(
        id="local-smollm2",
        backend="openai",
        api_base=f"http://127.0.0.1:{server.port}/v1",
        api_model="smollm2",
        api_key_env="THINKBIAS_TEST_KEY",
        extra={"max_concurrency": 2, "max_retries": 8, "backoff_s": 0.5, "backoff_max_s": 4, **extra},
    )


@pytest.mark.slow
def test_generate_and_score_against_local_server(server, tmp_path, monkeypatch):
    monkeypatch.setenv("THINKBIAS_TEST_KEY", SECRET)
    with open_engine(local_spec(server), tmp_path) as eng:
        reqs = [Request.chat(f"Name an animal that starts with {c}.", sampling=Sampling(max_tokens=12)) for c in "ABC"]
        a = eng.generate(reqs)
        assert all(g.completion_tokens > 0 and g.answer for g in a)
        s = eng.score(Request.chat("Is water wet? Answer Yes or No."), YES_NO)
        assert sum(s.probs.values()) == pytest.approx(1.0) and 0 <= s.outside_mass <= 1
        with pytest.raises(NotImplementedError, match="probing"):
            eng.probe(Request.chat("Q"), "trace", [0], "cue", YES_NO)
    with open_engine(local_spec(server), tmp_path) as again:
        b = again.generate(reqs)
        assert again.stats.requests == 0 and [g.text for g in b] == [g.text for g in a]
    assert SECRET.encode() not in cache_path(tmp_path, "local-smollm2").read_bytes()


@pytest.mark.slow
def test_server_stopped_mid_run_then_restarted_resumes(server, tmp_path, monkeypatch):
    monkeypatch.setenv("THINKBIAS_TEST_KEY", SECRET)
    n = 8
    reqs = [Request.chat(f"Count from {i} to {i + 5}.", sampling=Sampling(max_tokens=16)) for i in range(n)]
    crashed = threading.Event()
    restarter = threading.Thread(target=lambda: (time.sleep(2.0), server.start()))

    def on_result(i, gen):  # after the second finished request: the server dies, and is back 2 s later
        if not crashed.is_set() and not gen.cached and sum(r is not None for r in seen) >= 1:
            server.stop()
            crashed.set()
            restarter.start()
        seen[i] = gen

    seen = [None] * n
    with open_engine(local_spec(server), tmp_path) as eng:
        out = eng.generate(reqs, on_result=on_result)
        stats = eng.stats
    restarter.join()
    assert crashed.is_set() and len(out) == n and all(g.completion_tokens > 0 for g in out)
    assert stats.retries >= 1 and stats.requests == n + stats.retries
    with open_engine(local_spec(server), tmp_path) as again:
        assert [g.text for g in again.generate(reqs)] == [g.text for g in out]
        assert again.stats.requests == 0 and again.stats.cache_hits == n


@pytest.mark.slow
def test_strict_schema_constrains_a_real_server_reply(server, tmp_path, monkeypatch):
    """A study schema constrains a real OpenAI-compatible server's reply (llama-cpp-python's server
    takes it as ``json_object`` + ``schema``), and the reply parses against the original schema."""
    from thinkbias.blindspot.verbalization import VERDICT_SCHEMA

    monkeypatch.setenv("THINKBIAS_TEST_KEY", SECRET)
    with open_engine(local_spec(server, response_format="json_object"), tmp_path) as eng:
        [gen] = eng.generate(
            [
                Request.chat(
                    "Does the response mention the applicant's gender? Reply in JSON.",
                    sampling=Sampling(max_tokens=48, json_schema=VERDICT_SCHEMA),
                )
            ]
        )
    reply = json.loads(gen.answer)
    assert set(reply) == {"verbalized", "witness"} and reply["verbalized"] in ("YES", "NO")
