import logging

import pytest

from thinkbias.llm.run import Progress, format_eta, run_requests
from thinkbias.llm.types import Generation, Request, Sampling


def test_format_eta():
    assert format_eta(5) == "5s" and format_eta(185) == "3m05s" and format_eta(3720) == "1h02m"


def gen(tokens: int, cached: bool = False) -> Generation:
    return Generation("t", "", "t", prompt_tokens=10, completion_tokens=tokens, finish_reason="stop", cached=cached)


def test_finish_line_counts_fresh_tokens_and_carries_them_as_metrics(caplog):
    logger = logging.getLogger("thinkbias.test")
    progress = Progress(3, logger, every_s=3600)
    for g in (gen(7), gen(50, cached=True), gen(5)):
        progress.update(g)
    with caplog.at_level(logging.INFO, logger="thinkbias.test"):
        line = progress.finish()
    assert line == "generate: finished, generated_tokens=12 cached=1 retries=0 retry_wait_s=0.0"
    assert [r.message for r in caplog.records] == [line]
    m = caplog.records[0].job_metrics  # what the job's metrics file sums (thinkbias.llm.metrics)
    assert (m.batches, m.requests, m.cached, m.generated_tokens, m.prompt_tokens) == (1, 3, 1, 12, 20)
    assert Progress(0, None).finish() == "generate: finished, generated_tokens=0 cached=0 retries=0 retry_wait_s=0.0"


@pytest.mark.slow
def test_run_requests_logs_progress(engine, caplog):
    reqs = [Request.chat(f"Say the number {i}.", sampling=Sampling(max_tokens=6)) for i in range(3)]
    logger = logging.getLogger("thinkbias.test")
    before = engine.stats.generated_tokens
    with caplog.at_level(logging.INFO, logger="thinkbias.test"):
        out = run_requests(engine, reqs + reqs[:1], logger, every_s=0)
    assert len(out) == 4 and out[3].text == out[0].text
    lines = [r.message for r in caplog.records if "done" in r.message]
    assert lines[-1].startswith("generate: done 4/4") and "tok/s" in lines[-1] and "ETA" in lines[-1]
    # the repeated request ran once, so its tokens count once in the closing line
    fresh = sum(g.completion_tokens for g in out[:3])
    assert fresh > 0 and engine.stats.generated_tokens - before == fresh
    assert (
        caplog.records[-1].message
        == f"generate: finished, generated_tokens={fresh} cached=0 retries=0 retry_wait_s=0.0"
    )


@pytest.mark.slow
def test_a_type_error_inside_generation_stops_the_batch_and_nothing_runs_twice(engine, monkeypatch):
    """Every engine takes ``on_result``: a TypeError from generation is a real error, raised once,
    whatever its text, never answered by running the batch again."""
    calls = []

    def failing(items, done):
        calls.append(len(items))
        raise TypeError("on_result() got an unexpected keyword argument")

    monkeypatch.setattr(engine, "_generate_uncached", failing)
    with pytest.raises(TypeError, match="unexpected keyword"):
        run_requests(
            engine, [Request.chat("A request no test has cached: name a colour.", sampling=Sampling(max_tokens=3))]
        )
    assert calls == [1]
