"""A model role builds its step's requests (seeded per request, schema only when constrained) and
runs them on its model, loaded once, through the cache: on the real embedded model."""

import logging
from types import SimpleNamespace

from thinkbias.llm.roles import ModelRole, request_seed, run_role
from thinkbias.llm.types import sha256_text

SCHEMA = {"type": "object", "properties": {"same": {"type": "string"}}, "required": ["same"]}


def test_request_seed_is_the_first_31_bits_of_the_sha256_of_seed_and_parts():
    digest = sha256_text("7", "dedup", "0", "1")
    assert request_seed(7, "dedup", "0", "1") == int(digest[:8], 16) & 0x7FFFFFFF
    assert request_seed(7, "dedup", "0", "1") != request_seed(7, "dedup", "1", "0")


def test_from_params_reads_the_job_params_and_the_first_weight_file():
    params = SimpleNamespace(
        model="m",
        registry="r.yaml",
        cache_dir="c",
        seed=3,
        temperature=0.7,
        max_tokens=12,
        constrained=True,
        task="loan",
    )
    role = ModelRole.from_params(params, ["w.gguf", "other"], n_threads=1)
    assert role == ModelRole(
        model="m",
        registry="r.yaml",
        cache_dir="c",
        seed=3,
        temperature=0.7,
        max_tokens=12,
        top_p=1.0,
        constrained=True,
        weights="w.gguf",
        n_threads=1,
    )
    assert ModelRole.from_params(SimpleNamespace(model="m", registry="r", cache_dir="c", seed=1)).weights == ""


def test_requests_carry_the_role_sampling_and_the_schema_only_when_constrained():
    role = ModelRole(model="m", registry="r", cache_dir="c", seed=5, temperature=0.3, max_tokens=9, constrained=True)
    req = role.chat("Same?", "dedup", "0", "1", json_schema=SCHEMA)
    assert req.messages == (("user", "Same?"),)
    assert (req.sampling.temperature, req.sampling.max_tokens, req.sampling.top_p) == (0.3, 9, 1.0)
    assert req.sampling.seed == request_seed(5, "dedup", "0", "1") and req.sampling.json_schema == SCHEMA
    free = ModelRole(model="m", registry="r", cache_dir="c", seed=5, constrained=False)
    assert free.chat("Same?", "dedup", "0", "1", json_schema=SCHEMA).sampling.json_schema is None


def test_run_role_runs_on_the_model_then_answers_from_the_cache(embedded_model, tmp_path, caplog):
    role = ModelRole(
        model="smollm2-135m",
        registry="config/models.yaml",
        cache_dir=str(tmp_path / "cache"),
        seed=1,
        temperature=0.0,
        max_tokens=4,
        weights=str(embedded_model),
        n_threads=1,
    )
    reqs = [role.chat("Say yes.", "t", "a"), role.chat("Say no.", "t", "b")]
    logger = logging.getLogger("thinkbias.test_roles")
    with caplog.at_level(logging.INFO, logger="thinkbias.test_roles"):
        first = run_role(role, reqs, logger)
        again = run_role(role, reqs, logger)
    assert len(first) == 2 and not any(g.cached for g in first) and all(g.completion_tokens > 0 for g in first)
    assert all(g.cached for g in again) and [g.text for g in again] == [g.text for g in first]
    closing = [r.message for r in caplog.records if "finished" in r.message]
    assert closing[1] == "generate: finished, generated_tokens=0 cached=2 retries=0 retry_wait_s=0.0"
    assert run_role(role, [], logger) == []
