"""Glue for the thin scripts that Snakemake rules call: logging to the rule's log file."""

from __future__ import annotations

import contextlib
import logging
import sys
from pathlib import Path
from typing import Iterator


@contextlib.contextmanager
def rule_logging(log_path: str | Path | None, name: str = "thinkbias") -> Iterator[logging.Logger]:
    """Send stderr and a logger to the rule's log file for the duration of a script.

    Exceptions are logged with their traceback and re-raised, so Snakemake marks the job failed
    and the log says why.
    """
    logger = logging.getLogger(name)
    logger.setLevel(logging.INFO)
    if not log_path:
        yield logger
        return
    Path(log_path).parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "a", encoding="utf-8", buffering=1) as fh:
        handler = logging.StreamHandler(fh)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
        logger.addHandler(handler)
        old_stderr = sys.stderr
        sys.stderr = fh
        try:
            yield logger
        except BaseException:
            logger.exception("job failed")
            raise
        finally:
            sys.stderr = old_stderr
            logger.removeHandler(handler)
