"""Replies with no answer in them, from a real local server: ``content: null``, whitespace, a
refusal, a content filter. Each is counted and retried, none is ever cached, a job whose every
attempt comes back empty fails naming why, and its rerun asks the server again."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from openai.types.chat import ChatCompletion

from tests.llm.api_job import run_job
from tests.llm.api_servers import ScriptedApi, api_registry, cached_entries, completion
from thinkbias.llm import open_engine
from thinkbias.llm.api_reply import empty_reply
from thinkbias.llm.metrics import read_job_metrics
from thinkbias.llm.openai_backend import ApiRetriesExhausted
from thinkbias.llm.types import ModelSpec, Request, Sampling

API = ModelSpec(
    id="api-model",
    backend="openai",
    api_base="http://127.0.0.1:9/v1",
    api_model="served",
    extra={"max_retries": 2, "backoff_s": 0.01, "max_concurrency": 1},
)


def test_content_null_fails_the_job_caches_nothing_and_the_rerun_asks_again(tmp_path):
    """The 4 requests of a job answered ``content: null``: the job fails (it exited 0 with 4 empty
    answers, cached), nothing is cached, and once the server answers the rerun sends all 4."""
    state = {"empty": True}

    def respond(n, headers):
        return 200, {}, completion(None if state["empty"] else "B", completion_tokens=1)

    cache, log = tmp_path / "cache", tmp_path / "job.log"
    with ScriptedApi(respond) as api:
        reg = api_registry(tmp_path / "models.yaml", api.url, max_retries=2)
        failed = run_job(reg, cache, 4, log, tmp_path / "failed.json")
        assert failed.returncode != 0
        text = log.read_text()
        assert (
            f"model 'scripted-api' (served) at {api.url}: 3 attempts in " in text
            and "last error: empty reply: content null, no reasoning, finish_reason 'stop'" in text
        )
        waits = [line for line in text.splitlines() if "retrying in" in line]
        assert len(waits) == 2 and all("failed (empty reply: content null" in w for w in waits)
        assert len(api.received) == 3  # the first request's attempts; the job stopped there
        assert not (tmp_path / "failed.json").exists() and cached_entries(cache, "scripted-api") == 0

        state["empty"] = False
        rerun = run_job(reg, cache, 4, log, tmp_path / "rerun.json")
        assert rerun.returncode == 0, rerun.stderr
        out = json.loads(rerun.stdout)
        assert out["answers"] == ["B"] * 4 and out["cached"] == [False] * 4 and out["empty_replies"] == 0
        assert len(api.received) == 3 + 4 and cached_entries(cache, "scripted-api") == 4

        again = json.loads(run_job(reg, cache, 4, log, tmp_path / "again.json").stdout)
        assert again["cached"] == [True] * 4 and len(api.received) == 7


def test_an_empty_reply_retried_into_an_answer_is_counted_in_the_closing_line_and_metrics(tmp_path):
    def respond(n, headers):
        return 200, {}, completion(None if n == 0 else "A", completion_tokens=2)

    with ScriptedApi(respond) as api:
        reg = api_registry(tmp_path / "models.yaml", api.url)
        job = run_job(reg, tmp_path / "cache", 1, tmp_path / "job.log", tmp_path / "job.json")
    assert job.returncode == 0, job.stderr
    assert json.loads(job.stdout)["answers"] == ["A"] and len(api.received) == 2
    text = (tmp_path / "job.log").read_text()
    assert "attempt 1/7 failed (empty reply: content null, no reasoning, finish_reason 'stop'); retrying in" in text
    assert "generate: finished, generated_tokens=2 cached=0 retries=1 retry_wait_s=0.0 empty_replies=1" in text
    metrics = read_job_metrics(tmp_path / "job.json")
    assert (metrics.empty_replies, metrics.retries, metrics.requests) == (1, 1, 1)


@pytest.mark.parametrize(
    "body, why",
    [
        (completion("  \n"), "empty reply: content '  \\n', no reasoning, finish_reason 'stop'"),
        (
            completion(None, refusal="No, I will not rate this applicant."),
            "refused: 'No, I will not rate this applicant.' (finish_reason 'stop')",
        ),
        (completion("", finish_reason="content_filter"), "refused by the server's content filter"),
    ],
    ids=["whitespace", "refusal", "content-filter"],
)
def test_whitespace_refusals_and_filtered_replies_are_retried_and_never_cached(tmp_path, body, why):
    with ScriptedApi(lambda n, h: (200, {}, body)) as api:
        with open_engine(replace(API, api_base=api.url), tmp_path) as eng:
            with pytest.raises(ApiRetriesExhausted) as info:
                eng.generate([Request.chat("Rate the applicant.", sampling=Sampling(max_tokens=8))])
            assert eng.cache.count() == 0
    assert "3 attempts in" in str(info.value) and why in str(info.value)
    assert len(api.received) == 3 and eng.stats.empty_replies == 3 and eng.stats.retries == 2


def choice(**message_and_finish):
    finish = message_and_finish.pop("finish_reason", "stop")
    body = completion(message_and_finish.pop("content", None), finish_reason=finish, **message_and_finish)
    return ChatCompletion.model_validate(body).choices[0]


def test_replies_with_text_reasoning_or_a_budget_cut_are_answers():
    """What counts as an answer: any text, a reasoning trace alone (a thinking model cut off before
    its answer), or nothing at all when the token budget ran out (``finish_reason: length``, which
    the studies count as cut off)."""
    assert empty_reply(choice(content="B")) is None
    assert empty_reply(choice(content=None, reasoning_content="Compare the options.")) is None
    assert empty_reply(choice(content=None, finish_reason="length")) is None
    assert empty_reply(choice(content=None)) == "empty reply: content null, no reasoning, finish_reason 'stop'"
    assert empty_reply(choice(content=None, reasoning_content=" ")).startswith("empty reply")
