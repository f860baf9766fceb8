"""API failures that named nothing, each served exactly by a real local HTTP server: the error
names the model, the URL, the HTTP status and the start of the body, with the API key redacted
(the server echoes the request's Authorization header into the body)."""

from __future__ import annotations

import re
import time
from dataclasses import replace

import pytest

from tests.llm.api_servers import ScriptedApi
from thinkbias.llm import open_engine
from thinkbias.llm.openai_backend import ApiRequestFailed, ApiRetriesExhausted
from thinkbias.llm.types import ModelSpec, Request, Sampling

KEY_ENV = "THINKBIAS_ERRORS_TEST_KEY"
KEY = "sk-test-errors-0123456789abcdef"
API = ModelSpec(
    id="api-model",
    backend="openai",
    api_base="http://127.0.0.1:9/v1",
    api_model="served",
    api_key_env=KEY_ENV,
    extra={"max_retries": 2, "backoff_s": 0.01, "max_concurrency": 1},
)
HTML = (
    "<!DOCTYPE html><html><head><title>llama.cpp - chat</title></head><body><div id='app'>"
    "Sign in (you sent {auth})</div></body></html>"
)


def failure(respond, **extra) -> tuple[str, ScriptedApi, object]:
    """The error text of one generation against a server answering ``respond``."""
    with ScriptedApi(respond) as api:
        spec = replace(API, api_base=api.url, extra={**API.extra, **extra})
        with open_engine(spec, None) as eng:
            with pytest.raises((ApiRequestFailed, ApiRetriesExhausted)) as info:
                eng.generate([Request.chat("Hi", sampling=Sampling(max_tokens=4))])
    text = str(info.value)
    assert KEY not in text and KEY[3:] not in text
    assert text.startswith(f"model 'api-model' (served) at {api.url}: ")
    return text, api, info


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv(KEY_ENV, KEY)


def test_malformed_json_with_http_200():
    """It raised a raw ``JSONDecodeError``."""
    body = '{"id": "cmpl-1", "object": "chat.completion", "choices": [{"index": 0, "message": {"content": "Ye'
    text, api, info = failure(lambda n, h: (200, {}, body))
    assert info.type is ApiRequestFailed and len(api.received) == 1
    assert (
        f"attempt 1 failed and cannot be retried: HTTP 200 from POST {api.url}/chat/completions: "
        "a body that is not JSON (Unterminated string starting at: line 1 column 95 (char 94)): "
        'body \'{"id": "cmpl-1", "object": "chat.completion", "choices": [{"index": 0, "message": '
        '{"content": "Ye\'' in text
    )


def test_an_html_page_with_http_200():
    """It raised ``AttributeError: 'str' object has no attribute 'choices'``."""

    def respond(n, headers):
        return 200, {"Content-Type": "text/html; charset=utf-8"}, HTML.format(auth=headers["authorization"])

    text, api, info = failure(respond)
    assert info.type is ApiRequestFailed and len(api.received) == 1
    assert (
        f"HTTP 200 from POST {api.url}/chat/completions: an HTML page, not a chat completion (api_base should be "
        "the API's base URL, which for most servers ends in /v1): body '<!DOCTYPE html><html><head><title>llama.cpp "
        "- chat</title></head><body><div id='app'>Sign in (you sent Bearer [redacted])</div></body></html>'" in text
    )


def test_an_empty_choices_list():
    """It raised ``IndexError``; an empty list is an empty reply: counted, retried, never cached."""
    body = {"id": "cmpl-1", "object": "chat.completion", "created": 0, "model": "served", "choices": []}
    text, api, info = failure(lambda n, h: (200, {}, body))
    assert info.type is ApiRetriesExhausted and len(api.received) == 3
    assert (
        "3 attempts in " in text
        and f"last error: HTTP 200 from POST {api.url}/chat/completions: no choices (an empty 'choices' list): "
        'body \'{"id": "cmpl-1", "object": "chat.completion", "created": 0, "model": "served", '
        '"choices": []}\''
        in text
    )


def test_a_400_with_a_plain_text_body():
    """The body was dropped (``HTTP 400: Error code: 400``)."""

    def respond(n, headers):
        return 400, {"Content-Type": "text/plain"}, "Unsupported parameter: 'seed' is not supported with this model."

    text, api, info = failure(respond)
    assert info.type is ApiRequestFailed and len(api.received) == 1
    assert text.endswith(
        "attempt 1 failed and cannot be retried: HTTP 400: body 'Unsupported parameter: 'seed' is not supported "
        "with this model.'"
    )


def test_a_retry_after_beyond_the_retry_budget():
    """It failed at once without saying why."""
    body = {"error": {"message": "You exceeded your current quota.", "type": "insufficient_quota"}}
    start = time.monotonic()
    text, api, info = failure(lambda n, h: (429, {"Retry-After": "30"}, body), retry_budget_s=5, max_retries=4)
    assert time.monotonic() - start < 2 and len(api.received) == 1
    assert info.type is ApiRetriesExhausted
    assert "1 attempts in " in text and "last error: HTTP 429: You exceeded your current quota." in text
    assert re.search(
        r"; not retried: the server asked to wait 30.0 s \(Retry-After\), more than the [45]\.\d s left of "
        r"the retry budget \(extra\.retry_budget_s 5\)$",
        text,
    ), text


def test_durations_in_messages_are_rounded_to_a_tenth_of_a_second(caplog):
    """``retry-after-ms`` waits were printed as the server sent them (``4.80607 s``, ``0.41 s``)."""

    def respond(n, headers):
        wait_ms = "412.345" if n == 0 else "4806.07"
        return 429, {"retry-after-ms": wait_ms}, {"error": {"message": "slow down"}}

    with caplog.at_level("WARNING", logger="thinkbias"):
        text, api, info = failure(respond, retry_budget_s=3, max_retries=4)
    assert len(api.received) == 2
    [wait] = [r.message for r in caplog.records if "retrying in" in r.message]
    assert "attempt 1/5 failed (HTTP 429: slow down); retrying in 0.4 s (Retry-After)" in wait, wait
    assert re.search(
        r": 2 attempts in 0\.\d s failed .*; not retried: the server asked to wait 4\.8 s \(Retry-After\), more than "
        r"the 2\.\d s left of the retry budget \(extra\.retry_budget_s 3\)$",
        text,
    ), text
