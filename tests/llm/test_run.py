import logging

import pytest

from thinkbias.llm.run import format_eta, run_requests
from thinkbias.llm.types import Request, Sampling


def test_format_eta():
    assert format_eta(5) == "5s" and format_eta(185) == "3m05s" and format_eta(3720) == "1h02m"


@pytest.mark.slow
def test_run_requests_logs_progress(engine, caplog):
    reqs = [Request.chat(f"Say the number {i}.", sampling=Sampling(max_tokens=6)) for i in range(3)]
    logger = logging.getLogger("thinkbias.test")
    with caplog.at_level(logging.INFO, logger="thinkbias.test"):
        out = run_requests(engine, reqs + reqs[:1], logger, every_s=0)
    assert len(out) == 4 and out[3].text == out[0].text
    lines = [r.message for r in caplog.records if "done" in r.message]
    assert lines[-1].startswith("generate: done 4/4") and "tok/s" in lines[-1] and "ETA" in lines[-1]
