"""Every study's model calls log the API's retries and waits in the job's log and count them in the
closing line: the fairness, position and blindspot entry points run against a real local server
that answers 503 with ``Retry-After`` once, then replies."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.llm.api_servers import ScriptedApi, api_registry, completion
from thinkbias.llm import load_model_spec, open_engine
from thinkbias.llm.run import run_requests
from thinkbias.llm.types import Request, Sampling
from thinkbias.workflow import rule_logging


def busy_once(n: int, headers: dict):
    if n == 0:
        return 503, {"Retry-After": "0.3"}, {"error": {"message": "overloaded"}}
    return 200, {}, completion("Yes.", completion_tokens=2)


def registry(tmp_path, url: str) -> str:
    return api_registry(tmp_path / "models.yaml", url)


def fairness_job(reg: str, cache: str, logger) -> None:
    from thinkbias.fairness.generation import generate_and_probe_arm

    prompts = pd.DataFrame(
        [
            {
                "dataset": "adult",
                "pair_id": "p0",
                "side": "a",
                "attribute": "sex",
                "user": "Does this person earn more than $50K? Answer Yes or No.",
            }
        ]
    )
    with open_engine(load_model_spec(reg, "scripted-api"), cache) as engine:
        generate_and_probe_arm(engine, prompts, "nothink", 16, 4, None, logger)


def position_job(reg: str, cache: str, logger) -> None:  # what scripts/position/generate.py runs
    with open_engine(load_model_spec(reg, "scripted-api"), cache) as engine:
        run_requests(engine, [Request.chat("Which option, A, B, C or D?", sampling=Sampling(max_tokens=4))], logger)


def blindspot_job(reg: str, cache: str, logger) -> None:
    from thinkbias.llm.roles import ModelRole, run_role

    role = ModelRole(model="scripted-api", registry=reg, cache_dir=cache, seed=1, max_tokens=4)
    run_role(role, [role.chat("Approve the loan?", "rewrite", "x1")], logger)


@pytest.mark.parametrize(
    "study_job", [fairness_job, position_job, blindspot_job], ids=["fairness", "position", "blindspot"]
)
def test_each_study_logs_and_counts_api_retries(study_job, tmp_path):
    log_path = tmp_path / "job.log"
    with ScriptedApi(busy_once) as api:
        with rule_logging(log_path) as logger:
            study_job(registry(tmp_path, api.url), str(tmp_path / "cache"), logger)
    log = log_path.read_text()
    assert len(api.received) == 2
    assert (
        f"model 'scripted-api' at {api.url}: attempt 1/7 failed (HTTP 503: overloaded); retrying in 0.3 s "
        "(Retry-After)" in log
    )
    assert "finished, generated_tokens=2 cached=0 retries=1 retry_wait_s=0.3" in log
