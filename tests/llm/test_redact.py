"""API keys never leave the process: a real local server that echoes the Authorization header (in an
error body, or in a reply) against the real openai backend, with the key in the environment
variable the registry entry names; the key and its Bearer token must appear in no log, exception
text, traceback, console output or cache file."""

from __future__ import annotations

import io
import os
import secrets
import subprocess
import sys
import textwrap
import traceback
from pathlib import Path

import pytest

from tests.llm.api_servers import ScriptedApi, echo_authorization
from thinkbias.llm import open_engine
from thinkbias.llm.openai_backend import ApiRequestFailed, ApiRetriesExhausted
from thinkbias.llm.redact import RedactingStream, redact, redact_secrets, register_secret
from thinkbias.llm.types import ModelSpec, Request, Sampling
from thinkbias.workflow import rule_logging

REPO = Path(__file__).resolve().parents[2]
KEY_ENV = "THINKBIAS_ECHO_TEST_KEY"


@pytest.fixture
def key(monkeypatch) -> str:
    value = "sk-test-" + secrets.token_hex(12)
    monkeypatch.setenv(KEY_ENV, value)
    return value


def spec_for(url: str, **extra) -> ModelSpec:
    return ModelSpec(
        id="echo-api",
        backend="openai",
        api_base=url,
        api_model="served",
        api_key_env=KEY_ENV,
        extra={"max_retries": 1, "backoff_s": 0.01, "timeout_s": 5, "max_concurrency": 1, **extra},
    )


def folder_bytes(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def assert_clean(text: str, key: str, where: str = "") -> None:
    assert key not in text and key[3:] not in text, where
    assert "bearer sk" not in text.lower(), where


def test_redact_removes_registered_keys_bearer_tokens_and_sk_keys():
    register_secret("sk-unit-9f8e7d6c5b4a")
    assert redact("auth=Bearer sk-unit-9f8e7d6c5b4a end") == "auth=Bearer [redacted] end"
    assert redact('{"Authorization": "Bearer abc.def-123"}') == '{"Authorization": "Bearer [redacted]"}'
    assert redact("key sk-or-v1-0123456789abcdef here") == "key [redacted] here"
    assert redact("task-12345678 risk-adjusted") == "task-12345678 risk-adjusted"  # no false match
    # replies only lose the exact registered key, never ordinary words
    assert redact_secrets("Bearer bonds; sk-unit-9f8e7d6c5b4a") == "Bearer bonds; [redacted]"


def test_redacting_stream_catches_a_key_split_across_writes():
    out = io.StringIO()
    stream = RedactingStream(out)
    stream.write("auth=Bearer sk-spl")
    stream.write("it-0123456789\nnext ")
    stream.flush()
    assert out.getvalue() == "auth=Bearer [redacted]\nnext "


def test_error_body_echoing_the_key_reaches_no_log_exception_or_cache(key, tmp_path):
    log_path = tmp_path / "logs" / "job.log"
    cache = tmp_path / "cache"
    with ScriptedApi(echo_authorization(500)) as api:
        with pytest.raises(ApiRetriesExhausted) as info:
            with rule_logging(log_path) as logger:
                with open_engine(spec_for(api.url), cache) as engine:
                    logger.info("engine stats: %s", engine.stats)
                    engine.generate([Request.chat("Hi", sampling=Sampling(max_tokens=4))])
    # the server did receive the key and echoed it: the test would see it if anything leaked
    assert api.received[0]["authorization"] == f"Bearer {key}" and len(api.received) == 2
    err = info.value
    texts = {
        "str": str(err),
        "repr": repr(err),
        "traceback": "".join(traceback.format_exception(err)),
        "log": log_path.read_text(),
        "cache": folder_bytes(cache).decode("utf-8", "replace"),
    }
    for name, text in texts.items():
        assert_clean(text, key, name)
    assert "injected 500 auth=Bearer [redacted]" in str(err) and "echo-api" in str(err)
    assert "retrying in" in texts["log"] and "injected 500 auth=Bearer [redacted]" in texts["log"]
    assert err.__cause__ is None and err.__context__ is None


def test_non_retryable_error_echoing_the_key_is_redacted(key, tmp_path):
    with ScriptedApi(echo_authorization(401)) as api:
        with pytest.raises(ApiRequestFailed) as info, open_engine(spec_for(api.url), tmp_path) as engine:
            engine.generate([Request.chat("Hi", sampling=Sampling(max_tokens=4))])
    assert len(api.received) == 1 and "HTTP 401" in str(info.value)
    assert_clean("".join(traceback.format_exception(info.value)) + repr(info.value), key)


def test_reply_echoing_the_key_is_cached_without_it(key, tmp_path):
    with ScriptedApi(echo_authorization(200)) as api, open_engine(spec_for(api.url), tmp_path) as engine:
        [gen] = engine.generate([Request.chat("Hi", sampling=Sampling(max_tokens=4))])
    assert gen.text == "injected 200 auth=Bearer [redacted]"
    assert_clean(folder_bytes(tmp_path).decode("utf-8", "replace"), key)


JOB = textwrap.dedent("""
    import sys
    from thinkbias.llm import open_engine
    from thinkbias.llm.types import ModelSpec, Request, Sampling
    from thinkbias.workflow import rule_logging

    url, log, cache = sys.argv[1:4]
    spec = ModelSpec(id="echo-api", backend="openai", api_base=url, api_model="served",
                     api_key_env="THINKBIAS_ECHO_TEST_KEY", extra={"max_retries": 1, "backoff_s": 0.01})
    with rule_logging(log) as logger:
        with open_engine(spec, cache) as engine:
            print("stderr from the job", file=sys.stderr)
            engine.generate([Request.chat("Hi", sampling=Sampling(max_tokens=4))])
""")


def test_a_failing_job_prints_no_key_to_the_console(key, tmp_path):
    """A job process as Snakemake runs it: its console output (stdout, stderr: what Snakemake
    shows) and its log hold the redacted error, never the key."""
    log_path, cache = tmp_path / "job.log", tmp_path / "cache"
    with ScriptedApi(echo_authorization(503)) as api:
        proc = subprocess.run(
            [sys.executable, "-c", JOB, api.url, str(log_path), str(cache)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, KEY_ENV: key},
        )
    assert proc.returncode != 0 and len(api.received) == 2
    console = proc.stdout + proc.stderr
    assert "ApiRetriesExhausted" in console and "injected 503 auth=Bearer [redacted]" in console
    for text in (console, log_path.read_text(), folder_bytes(cache).decode("utf-8", "replace")):
        assert_clean(text, key)
    assert "stderr from the job" in log_path.read_text()


def test_rule_logging_redacts_any_exception_holding_a_key(tmp_path):
    register_secret("sk-job-abcdef123456")
    log_path = tmp_path / "job.log"
    with pytest.raises(RuntimeError) as info:
        with rule_logging(log_path) as logger:
            logger.info("calling with Bearer sk-job-abcdef123456")
            raise KeyError("header Authorization: Bearer sk-job-abcdef123456")
    assert type(info.value).__name__ == "SecretRedactedError"
    shown = "".join(traceback.format_exception(info.value)) + log_path.read_text()
    assert "sk-job-abcdef123456" not in shown and "KeyError" in shown and "Bearer [redacted]" in shown


@pytest.mark.slow
def test_snakemake_console_logs_and_cache_never_show_the_key(key, workflow_dir):
    """A real Snakemake run of the position study on an API model whose server answers 500 with the
    Authorization header in its body: the run fails, and neither Snakemake's console, nor any job
    log, nor the cache holds the key or its Bearer token (the redacted error is there)."""
    import yaml

    from tests.helpers import run_snakemake, tiny_config

    with ScriptedApi(echo_authorization(500)) as api:
        registry = yaml.safe_load((REPO / "config/models.yaml").read_text())
        registry["echo-api"] = {
            "backend": "openai",
            "description": "a local server echoing headers",
            "license": "mit",
            "api_base": api.url,
            "api_model": "served",
            "api_key_env": KEY_ENV,
            "files": [],
            "thinking": "none",
            "n_ctx": 4096,
            "gpus": 0,
            "extra": {"max_retries": 1, "backoff_s": 0.01},
        }
        (workflow_dir / "registry.yaml").write_text(yaml.safe_dump(registry, sort_keys=False))
        cfg = tiny_config(
            position={
                "benchmarks": {"mmlu": {"path": "resources/raw/mmlu/mmlu.jsonl", "n_questions": 1}},
                "runs": [{"model": "echo-api", "mode": "direct"}],
                "wilcoxon_pairs": [],
                "truncation": {"runs": []},
            }
        )
        cfg["registry"] = "registry.yaml"
        proc = run_snakemake(workflow_dir, ["--cores", "1", "position"], config=cfg, timeout=600, check=False)
    console = proc.stdout + proc.stderr
    assert proc.returncode != 0 and len(api.received) >= 2, console[-3000:]  # 4 orderings x 2 attempts
    logs = "".join(p.read_text() for p in (workflow_dir / "logs").rglob("*.log"))
    assert "injected 500 auth=Bearer [redacted]" in logs and "ApiRetriesExhausted" in console + logs
    for name, text in {
        "console": console,
        "logs": logs,
        "cache": folder_bytes(workflow_dir / "cache").decode("utf-8", "replace"),
        ".snakemake": folder_bytes(workflow_dir / ".snakemake").decode("utf-8", "replace"),
    }.items():
        assert_clean(text, key, name)
