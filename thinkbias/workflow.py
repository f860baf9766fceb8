"""Glue for the thin scripts that Snakemake rules call: logging to the rule's log file."""

from __future__ import annotations

import contextlib
import logging
import sys
import traceback
from pathlib import Path
from typing import Iterator

from thinkbias.llm.metrics import collect_job_metrics
from thinkbias.llm.redact import RedactingFormatter, RedactingStream, redact


class SecretRedactedError(RuntimeError):
    """An exception whose text held a secret, re-raised with its redacted traceback as message."""


def without_secrets(err: BaseException) -> BaseException:
    """``err`` itself when its traceback (chained exceptions included) holds no secret, else a
    ``SecretRedactedError`` whose message is the redacted traceback."""
    text = "".join(traceback.format_exception(err))
    clean = redact(text)
    return err if clean == text else SecretRedactedError(clean)


@contextlib.contextmanager
def rule_logging(
    log_path: str | Path | None, name: str = "thinkbias", metrics: str | Path | None = None
) -> Iterator[logging.Logger]:
    """Send stderr and a logger to the rule's log file for the duration of a script.

    Exceptions are logged with their traceback and re-raised, so Snakemake marks the job failed
    and the log says why. Everything written to the log passes through
    ``thinkbias.llm.redact.redact`` (API keys, ``Bearer`` tokens); an exception whose traceback
    holds such a secret leaves as a ``SecretRedactedError`` carrying the redacted traceback, so
    the key reaches neither the log nor the console.

    ``metrics``: the model job's metrics file (``thinkbias.llm.metrics``), written when the script
    succeeds from the closing lines its batches logged (a job that closed none writes zeros).
    """
    with _logging_to(log_path, name) as logger, collect_job_metrics(logger, metrics):
        yield logger


@contextlib.contextmanager
def _logging_to(log_path: str | Path | None, name: str) -> Iterator[logging.Logger]:
    """``rule_logging`` without the metrics file."""
    logger = logging.getLogger(name)
    old_level = logger.level
    logger.setLevel(logging.INFO)
    if not log_path:
        yield logger
        return
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "a", encoding="utf-8", buffering=1) as fh:
        handler = logging.StreamHandler(fh)
        handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(message)s"))
        logger.addHandler(handler)
        old_stderr = sys.stderr
        sys.stderr = RedactingStream(fh)  # type: ignore[assignment]
        try:
            yield logger
        except BaseException as err:
            logger.exception("job failed")
            clean = without_secrets(err)
            if clean is not err:
                raise clean from None
            raise
        finally:
            sys.stderr.flush()
            sys.stderr = old_stderr
            logger.removeHandler(handler)
            logger.setLevel(old_level)
