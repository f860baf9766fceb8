"""Keep API keys out of every text the workflow writes: logs, exceptions, the console, the cache.

A server may echo the request's ``Authorization`` header in an error body (or in a reply); the
text then travels into an exception, a job log and the Snakemake console. ``redact`` replaces the
keys this process has read (``register_secret``), any ``Bearer <token>`` and anything shaped like
an ``sk-...`` key with ``[redacted]``; ``redact_secrets`` only the registered keys (for model
replies). The openai backend registers the key it reads and redacts error messages and replies;
``thinkbias.workflow.rule_logging`` redacts the job log and the script's stderr.
"""

from __future__ import annotations

import logging
import re
import threading
from typing import TextIO

REDACTED = "[redacted]"
# "Bearer <token>" in any case, up to a quote, space or separator (headers echoed as text or JSON)
BEARER_RE = re.compile(r"(?i)\bbearer\s+(?!\[redacted\])[^\s\"'<>,;}\]]+")
# keys of OpenAI, DeepSeek, OpenRouter (sk-, sk-proj-, sk-or-v1-...): at least 8 characters after "sk-"
KEY_RE = re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}")
MIN_SECRET_LEN = 6  # shorter values would blank out ordinary words

_secrets: set[str] = set()
_lock = threading.Lock()


def register_secret(value: str | None) -> None:
    """Remember a secret (an API key read from the environment) so that ``redact`` removes it."""
    if value and len(value) >= MIN_SECRET_LEN:
        with _lock:
            _secrets.add(value)


def redact_secrets(text: str) -> str:
    """``text`` with every registered secret replaced (exact matches only: safe on model replies,
    where a pattern could blank out ordinary words)."""
    if not text:
        return text
    with _lock:
        secrets = sorted(_secrets, key=len, reverse=True)
    for s in secrets:
        if s in text:
            text = text.replace(s, REDACTED)
    return text


def redact(text: str) -> str:
    """``text`` with every registered secret, ``Bearer`` token and ``sk-`` key replaced (for
    messages, logs and the console)."""
    if not text:
        return text
    text = BEARER_RE.sub(f"Bearer {REDACTED}", redact_secrets(text))
    return KEY_RE.sub(REDACTED, text)


class RedactingFormatter(logging.Formatter):
    """A formatter whose output (message, traceback and all) passes through ``redact``."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class RedactingStream:
    """A text stream that writes ``redact(text)`` to ``target`` line by line (a secret split across
    two ``write`` calls is still caught: text is held until its line ends)."""

    def __init__(self, target: TextIO):
        self.target, self._pending = target, ""

    def write(self, text: str) -> int:
        self._pending += text
        if "\n" in self._pending:
            head, _, self._pending = self._pending.rpartition("\n")
            self.target.write(redact(head + "\n"))
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self.target.write(redact(self._pending))
            self._pending = ""
        self.target.flush()

    def __getattr__(self, name):  # fileno, encoding, isatty ... of the target
        return getattr(self.target, name)
