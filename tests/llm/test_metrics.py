"""A model job's metrics file: written from the closing lines' counters, read back checked."""

from __future__ import annotations

import json
import logging

import pytest

from thinkbias.llm.metrics import FIELDS, JobMetrics, read_job_metrics, write_job_metrics
from thinkbias.llm.run import Progress, run_requests
from thinkbias.llm.types import Generation, Request, Sampling
from thinkbias.workflow import rule_logging


def gen(tokens: int, prompt: int = 10, cached: bool = False) -> Generation:
    return Generation("t", "", "t", prompt_tokens=prompt, completion_tokens=tokens, finish_reason="stop", cached=cached)


def test_written_metrics_read_back_equal(tmp_path):
    m = JobMetrics(
        batches=2,
        requests=5,
        cached=1,
        generated_tokens=40,
        prompt_tokens=300,
        probe_tokens=24,
        retries=2,
        retry_wait_s=1.5,
        wall_s=3.25,
    )
    path = tmp_path / "a/b/job.json"
    write_job_metrics(path, m)
    assert read_job_metrics(path) == m
    assert set(json.loads(path.read_text())) == set(FIELDS)
    assert [p.name for p in path.parent.iterdir()] == ["job.json"]  # no temporary file left


NUMBERS = [k for k, kind in FIELDS.items() if kind != "str"]


@pytest.mark.parametrize(
    "text, message",
    [
        ("{", "not a job metrics file"),
        ("[1, 2]", "holds a JSON object, found list"),
        (json.dumps({**{k: 0 for k in NUMBERS}, "tokens": 3}), "unknown key 'tokens'"),
        (json.dumps({k: 0 for k in NUMBERS if k != "cached"}), "missing key 'cached'"),
        (json.dumps({**{k: 0 for k in NUMBERS}, "engine": 7}), "'engine' = 7 is not a text"),
        (
            json.dumps(
                {**{k: 0 for k in NUMBERS}, "generated_tokens": -1, "requests": 2.5, "retries": "1", "wall_s": True}
            ),
            "4 bad job metrics value(s): 'requests' = 2.5 is not a count (whole number >= 0); 'generated_tokens' = -1 "
            "is not a count (whole number >= 0); 'retries' = '1' is not a count (whole number >= 0); 'wall_s' = True "
            "is not seconds (a number >= 0)",
        ),
    ],
)
def test_a_bad_metrics_file_stops_naming_the_file_and_keys(tmp_path, text, message):
    path = tmp_path / "job.json"
    path.write_text(text)
    with pytest.raises(ValueError) as err:
        read_job_metrics(path)
    assert str(err.value).startswith(str(path)) and message in str(err.value)


def test_rule_logging_writes_the_sum_of_the_closing_lines(tmp_path):
    log, metrics = tmp_path / "job.log", tmp_path / "job.json"
    with rule_logging(log, metrics=metrics) as logger:
        first = Progress(3, logger, every_s=3600)
        for g in (gen(7, prompt=11), gen(50, cached=True), gen(5, prompt=13)):
            first.update(g)
        first.finish()
        # a child logger (a library module's) reaches the same job
        second = Progress(1, logging.getLogger("thinkbias.fairness.generation"), label="generate+probe")
        second.update(gen(4, prompt=9))
        second.finish()
        Progress(0, logger).finish()  # a batch with nothing to run
    m = read_job_metrics(metrics)
    assert (m.batches, m.requests, m.cached, m.generated_tokens, m.prompt_tokens) == (3, 4, 1, 16, 33)
    assert (m.probe_tokens, m.retries, m.retry_wait_s) == (0, 0, 0.0) and m.wall_s > 0
    lines = [line.split(" INFO ", 1)[1] for line in log.read_text().splitlines() if "finished" in line]
    assert lines == [
        "generate: finished, generated_tokens=12 cached=1 retries=0 retry_wait_s=0.0",
        "generate+probe: finished, generated_tokens=4 cached=0 retries=0 retry_wait_s=0.0",
        "generate: finished, generated_tokens=0 cached=0 retries=0 retry_wait_s=0.0",
    ]


def test_a_failed_job_writes_no_metrics_and_a_job_without_batches_writes_zeros(tmp_path):
    with pytest.raises(RuntimeError):
        with rule_logging(tmp_path / "failed.log", metrics=tmp_path / "failed.json") as logger:
            Progress(0, logger).finish()
            raise RuntimeError("model crashed")
    assert not (tmp_path / "failed.json").exists()
    with rule_logging(tmp_path / "none.log", metrics=tmp_path / "none.json"):
        pass
    none = read_job_metrics(tmp_path / "none.json")
    assert none.batches == 0 and none.generated_tokens == 0


@pytest.mark.slow
def test_metrics_of_a_real_engine_match_its_generations(fresh_engine, tmp_path):
    """On the embedded model: generated and prompt tokens are the generations' own counts, a repeat
    run is all cached and generates nothing, a score after generation counts as probe tokens."""
    engine = fresh_engine(tmp_path / "cache")
    reqs = [Request.chat(f"Name a colour, number {i}.", sampling=Sampling(max_tokens=5)) for i in range(3)]
    with rule_logging(tmp_path / "job.log", metrics=tmp_path / "first.json") as logger:
        gens = run_requests(engine, reqs, logger)
    first = read_job_metrics(tmp_path / "first.json")
    assert first.generated_tokens == sum(g.completion_tokens for g in gens) > 0
    assert first.prompt_tokens == sum(g.prompt_tokens for g in gens) and first.probe_tokens == 0
    assert (first.batches, first.requests, first.cached) == (1, 3, 0)
    with rule_logging(tmp_path / "job.log", metrics=tmp_path / "again.json") as logger:
        run_requests(engine, reqs, logger)
    again = read_job_metrics(tmp_path / "again.json")
    assert (again.requests, again.cached, again.generated_tokens, again.prompt_tokens) == (3, 3, 0, 0)
    from thinkbias.llm.types import YES_NO

    with rule_logging(tmp_path / "job.log", metrics=tmp_path / "scored.json") as logger:
        progress = Progress(1, logger, engine=engine)
        req = Request.chat("Is the sky blue? Answer Yes or No.", sampling=Sampling(max_tokens=3))
        g = engine.generate([req])[0]
        engine.score(Request.chat(req.messages[-1][1], prefill="Answer:"), YES_NO)
        progress.update(g)
        progress.finish()
    scored = read_job_metrics(tmp_path / "scored.json")
    assert scored.prompt_tokens == g.prompt_tokens and scored.probe_tokens > 0


def test_a_metrics_file_written_before_empty_replies_and_engine_existed_reads_them_as_unset(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps({k: 1 for k in NUMBERS if k != "empty_replies"}))
    old = read_job_metrics(path)
    assert old.empty_replies == 0 and old.engine == "" and old.retries == 1
