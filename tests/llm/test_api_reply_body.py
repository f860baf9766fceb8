"""Reply bodies that do not arrive as a reply to their request, each written byte by byte by a real
local server: a runaway reply far longer than its ``max_tokens`` allows (refused while it streams
in, never held whole in memory, retried, never cached), replies at the size limit and one byte over
it, and replies cut off half-way (the error says how many bytes arrived)."""

from __future__ import annotations

import json
import re
import tracemalloc
from dataclasses import replace

import pytest

from tests.llm.api_job import run_job
from tests.llm.api_servers import RawHttpApi, api_registry, cached_entries, completion
from thinkbias.llm import open_engine
from thinkbias.llm.openai_backend import ApiRetriesExhausted
from thinkbias.llm.types import ModelSpec, Request, Sampling

API = ModelSpec(
    id="api-model",
    backend="openai",
    api_base="http://127.0.0.1:9/v1",
    api_model="served",
    extra={"max_retries": 2, "backoff_s": 0.01, "max_concurrency": 1, "timeout_s": 30},
)
MB = 1 << 20
# a chat completion around its content, which the tests fill with as many bytes as they need
HEAD, TAIL = (part.encode() for part in json.dumps(completion("@@", completion_tokens=20)).split('"@@"'))
LIMIT_16 = 16 * 256 + 1024 * 1024  # a reply to max_tokens 16 may hold 1,052,672 bytes


def reply_of(size: int) -> bytes:
    """A chat completion of exactly ``size`` bytes whose answer is ``A`` followed by spaces."""
    padding = size - len(HEAD) - len(TAIL) - 3
    return HEAD + b'"A' + b" " * padding + b'"' + TAIL


def headers(length: int | None) -> bytes:
    framing = f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked"
    return f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{framing}\r\n\r\n".encode()


def send_chunked(write, pieces) -> None:
    """Write ``pieces`` as the chunks of a chunked body (the length of the whole never sent)."""
    for piece in pieces:
        write(f"{len(piece):x}\r\n".encode())
        write(piece)
        write(b"\r\n")
    write(b"0\r\n\r\n")


RUNAWAY_MB = b"x" * MB


def runaway(n, write) -> None:
    """60 MB of content, a MB at a time, in a reply whose usage claims 20 tokens."""
    write(headers(None))
    send_chunked(write, [HEAD + b'"'] + [RUNAWAY_MB] * 60 + [b'"' + TAIL])


def test_the_limit_is_256_bytes_per_token_and_a_mib():
    from thinkbias.llm.api_reply import BYTES_PER_TOKEN, REPLY_ALLOWANCE_BYTES, reply_byte_limit

    assert (BYTES_PER_TOKEN, REPLY_ALLOWANCE_BYTES) == (256, 1024 * 1024)
    assert reply_byte_limit(16) == LIMIT_16 and reply_byte_limit(8192) == 3 * MB


def test_a_runaway_reply_is_refused_as_it_streams_in_and_never_held_whole():
    """60 MB answering ``max_tokens: 16`` was read whole and returned (and cached). Each attempt
    stops reading once the body passes the limit; the request fails naming the bytes and the limit,
    and the process never holds more than a few MB."""
    with RawHttpApi(runaway) as api:
        with open_engine(replace(API, api_base=api.url), None) as eng:
            tracemalloc.start()
            try:
                with pytest.raises(ApiRetriesExhausted) as info:
                    eng.generate([Request.chat("Hi", sampling=Sampling(max_tokens=16))])
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            assert eng.cache.count() == 0
    assert peak < 16 * MB, f"{peak:,} bytes held at the peak"
    assert len(api.sent) == 3 and all(sent < 60 * MB for sent in api.sent)
    assert eng.stats.requests == 3 and eng.stats.retries == 2
    text = str(info.value)
    assert text.startswith(f"model 'api-model' (served) at {api.url}: 3 attempts in ")
    assert re.search(
        rf"last error: HTTP 200 from POST {re.escape(api.url)}/chat/completions: 1,\d{{3}},\d{{3}} bytes received "
        r"and the reply not ended, more than the 1,052,672 bytes a reply to max_tokens 16 may hold "
        r"\(256 bytes per token \+ 1,048,576\); refused$",
        text,
    ), text


def test_a_job_answered_by_a_runaway_reply_fails_caches_nothing_and_the_rerun_asks_again(tmp_path):
    """The job exited 0 with the 60 MB answer cached and ``generated_tokens=20`` in its metrics.
    Now it fails, each attempt logged, nothing cached, no metrics; once the server answers, the
    rerun asks again and caches that answer."""
    state = {"runaway": True}

    def send(n, write):
        if state["runaway"]:
            runaway(n, write)
        else:
            write(headers(len(reply_of(400))) + reply_of(400))

    cache, log = tmp_path / "cache", tmp_path / "job.log"
    with RawHttpApi(send) as api:
        reg = api_registry(tmp_path / "models.yaml", api.url, max_retries=1)
        failed = run_job(reg, cache, 1, log, tmp_path / "failed.json")
        assert failed.returncode != 0
        text = log.read_text()
        assert f"model 'scripted-api' (served) at {api.url}: 2 attempts in " in text
        assert (
            "bytes received and the reply not ended, more than the 1,049,600 bytes a reply to max_tokens 4 may hold"
            in text
        )
        waits = [line for line in text.splitlines() if "retrying in" in line]
        assert len(waits) == 1 and "attempt 1/2 failed (HTTP 200 from POST" in waits[0]
        assert not (tmp_path / "failed.json").exists() and cached_entries(cache, "scripted-api") == 0

        state["runaway"] = False
        rerun = run_job(reg, cache, 1, log, tmp_path / "rerun.json")
        assert rerun.returncode == 0, rerun.stderr
        out = json.loads(rerun.stdout)
        assert out["answers"] == ["A"] and out["cached"] == [False]
        assert len(api.sent) == 3 and cached_entries(cache, "scripted-api") == 1


@pytest.mark.parametrize("framing", ["content-length", "chunked"])
@pytest.mark.parametrize("size, refused", [(LIMIT_16, False), (LIMIT_16 + 1, True)], ids=["at-limit", "one-over"])
def test_a_reply_at_the_limit_is_a_result_and_one_byte_more_is_refused(size, refused, framing):
    """A declared ``Content-Length`` past the limit is refused before a byte of the body is read."""
    body = reply_of(size)

    def send(n, write):
        if framing == "content-length":
            write(headers(len(body)) + body)
        else:
            write(headers(None))
            send_chunked(write, [body[i : i + 65536] for i in range(0, len(body), 65536)])

    request = Request.chat("Hi", sampling=Sampling(max_tokens=16))
    with RawHttpApi(send) as api, open_engine(replace(API, api_base=api.url), None) as eng:
        if not refused:
            [gen] = eng.generate([request])
            assert gen.answer == "A" and eng.cache.count() == 1 and len(api.sent) == 1
            return
        with pytest.raises(ApiRetriesExhausted) as info:
            eng.generate([request])
        assert eng.cache.count() == 0 and len(api.sent) == 3
    text = str(info.value)
    allowed = "more than the 1,052,672 bytes a reply to max_tokens 16 may hold (256 bytes per token + 1,048,576)"
    if framing == "content-length":
        assert f"the reply is 1,052,673 bytes long (Content-Length), {allowed}; refused unread" in text, text
    else:
        assert f"1,052,673 bytes received and the reply not ended, {allowed}; refused" in text, text


def test_a_body_cut_off_half_way_says_how_many_bytes_arrived():
    """A reply promising 5,000 bytes that closes after 1,234 failed as ``Connection error.`` alone."""
    body = reply_of(5000)

    def send(n, write):
        write(headers(5000) + body[:1234])

    with RawHttpApi(send) as api, open_engine(replace(API, api_base=api.url), None) as eng:
        with pytest.raises(ApiRetriesExhausted) as info:
            eng.generate([Request.chat("Hi", sampling=Sampling(max_tokens=16))])
        assert eng.cache.count() == 0 and len(api.sent) == 3
    text = str(info.value)
    assert text.startswith(f"model 'api-model' (served) at {api.url}: 3 attempts in "), text
    assert (
        f"last error: HTTP 200 from POST {api.url}/chat/completions: the reply was cut off after 1,234 of "
        "5,000 bytes (RemoteProtocolError: " in text
    ), text


def test_a_chunked_body_cut_off_is_retried_into_an_answer(caplog):
    """No length promised: the bytes that arrived are named, and the retry's whole reply is the result."""
    body = reply_of(3000)

    def send(n, write):
        write(headers(None))
        if n == 0:
            write(f"{len(body):x}\r\n".encode() + body[:2000])
        else:
            send_chunked(write, [body])

    with RawHttpApi(send) as api, open_engine(replace(API, api_base=api.url), None) as eng:
        with caplog.at_level("WARNING", logger="thinkbias"):
            [gen] = eng.generate([Request.chat("Hi", sampling=Sampling(max_tokens=16))])
        assert gen.answer == "A" and eng.cache.count() == 1 and eng.stats.retries == 1
    [wait] = [r.message for r in caplog.records if "retrying in" in r.message]
    assert (
        f"attempt 1/3 failed (HTTP 200 from POST {api.url}/chat/completions: the reply was cut off after 2,000 bytes ("
        in wait
    )
