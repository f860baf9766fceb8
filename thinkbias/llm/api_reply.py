"""A chat completion checked before it becomes a result: a reply that is not a chat completion, or
holds no answer, is an error that says what came back.

``chat_completion`` reads the raw HTTP reply of a successful status: a body that is not JSON, an
HTML page (an ``api_base`` pointing at a web page rather than the API), JSON without a ``choices``
list or a choice without a message raise ``ApiBadReply``, naming the status, the request's URL
and the start of the body (redacted: ``thinkbias.llm.redact``); the backend does not retry it.

An OpenAI-compatible server can also answer HTTP 200 with nothing in it: an empty ``choices``
list, ``content: null`` (or only whitespace) and no reasoning, a ``refusal`` instead of content, or
``finish_reason: content_filter``. Such a reply is not the model's answer to the prompt, so it is
never cached: ``empty_reply`` says what is missing and the backend raises ``ApiEmptyReply``, which
its retry policy retries like a 5xx; when every attempt comes back empty the request fails loudly
(``ApiRetriesExhausted``). A reply cut off by its token budget before any text
(``finish_reason: length``) is a result like any other truncated reply and is kept.

``read_reply`` reads the body itself, streamed and capped, before any of this: a body that stops
before its end (the connection closed, a read timeout) raises ``ApiCutOffReply`` saying how many
bytes arrived; a body longer than its request's token limit allows raises ``ApiOversizedReply`` as
soon as it is known, without holding the rest. Both are retried like a 5xx and never cached.

The size limit, ``reply_byte_limit``: ``max_tokens * BYTES_PER_TOKEN + REPLY_ALLOWANCE_BYTES``.
``max_tokens`` (or ``max_completion_tokens``) bounds every generated token, reasoning included,
for OpenAI's reasoning models, vLLM, llama.cpp and today's DeepSeek API. Real text averages about
4 bytes per token; the longest tokens of byte-level BPE vocabularies are runs of spaces or
punctuation of about a hundred bytes (SmolLM2's longest, a newline and 80 spaces, is 81 bytes);
JSON escaping (``\\uXXXX``) makes non-ASCII text two to three times longer. 256 bytes per token
holds a reply made wholly of the longest tokens, or of escaped CJK text, with room to spare. The
fixed 1 MiB covers the JSON around the text (ids, usage, a score's ``top_logprobs``, a server's
timings) and a chain of thought that an API does not count in ``max_tokens``
(``deepseek-reasoner`` before 2025-08: up to 32K tokens, about 130 kB). So a reply to
``max_tokens: 16`` may hold about 1 MB and one to 8192 tokens about 3 MB: far above any real
reply, far below a runaway one.
"""

from __future__ import annotations

import json
import re

from thinkbias.llm.redact import redact

REPLY_TEXT_START = 200  # characters of a refusal quoted in messages
BODY_START = 200  # characters of a reply body quoted in messages
HTML_HINT = "api_base should be the API's base URL, which for most servers ends in /v1"
BYTES_PER_TOKEN = 256  # bound on the JSON text of one generated token (module docstring)
REPLY_ALLOWANCE_BYTES = 1 << 20  # JSON envelope, logprobs, reasoning not counted in max_tokens


class ApiEmptyReply(RuntimeError):
    """The server answered with no content, no reasoning and no budget cut, or refused (retryable)."""


class ApiBadReply(RuntimeError):
    """The server answered a successful status with something that is not a chat completion."""


class ApiBrokenReply(RuntimeError):
    """The body of a reply did not arrive as a whole reply to its request (retryable)."""


class ApiCutOffReply(ApiBrokenReply):
    """The body stopped before its end: the connection closed or went silent half-way."""


class ApiOversizedReply(ApiBrokenReply):
    """The body is longer than any reply to its request's token limit can be."""


def reply_byte_limit(max_tokens: int) -> int:
    """The most bytes a reply body to a request of ``max_tokens`` may hold (module docstring)."""
    return max(0, max_tokens) * BYTES_PER_TOKEN + REPLY_ALLOWANCE_BYTES


def reply_origin(raw) -> str:
    """``HTTP <status> from <method> <url>`` of the openai client's raw response ``raw``."""
    return f"HTTP {raw.status_code} from {raw.method} {raw.url}"


def declared_length(raw) -> int | None:
    """The reply's ``Content-Length`` in bytes, or None when it sends none (or a bad one)."""
    try:
        return int(raw.headers["content-length"])
    except (KeyError, TypeError, ValueError):
        return None


def read_reply(raw, max_tokens: int) -> str:
    """The body of ``raw`` (the openai client's streamed response of a 2xx reply) as text, read
    chunk by chunk up to ``reply_byte_limit(max_tokens)``: ``ApiOversizedReply`` as soon as the
    body (or its ``Content-Length``) passes the limit, ``ApiCutOffReply`` when it stops before its
    end, each naming the bytes that arrived."""
    limit = reply_byte_limit(max_tokens)
    where = reply_origin(raw)
    allowed = (
        f"the {limit:,} bytes a reply to max_tokens {max_tokens:,} may hold "
        f"({BYTES_PER_TOKEN} bytes per token + {REPLY_ALLOWANCE_BYTES:,})"
    )
    declared = declared_length(raw)
    if declared is not None and declared > limit:
        raise ApiOversizedReply(
            f"{where}: the reply is {declared:,} bytes long (Content-Length), more than {allowed}; refused unread"
        )
    body = bytearray()
    try:
        for chunk in raw.iter_bytes():
            body += chunk
            if len(body) > limit:
                raise ApiOversizedReply(
                    f"{where}: {len(body):,} bytes received and the reply not ended, more than {allowed}; refused"
                )
    except ApiOversizedReply:
        raise
    except Exception as err:  # noqa: BLE001 - whatever stopped the body (closed, timed out), it is cut off
        arrived = getattr(raw.http_response, "num_bytes_downloaded", len(body))
        of = f" of {declared:,}" if declared is not None else ""
        cause = redact(f"{type(err).__name__}: {err}")
        raise ApiCutOffReply(f"{where}: the reply was cut off after {arrived:,}{of} bytes ({cause})") from None
    return body.decode("utf-8", errors="replace")


def body_start(text: str, limit: int = BODY_START) -> str:
    """The start of a reply body for a message: redacted first (a key is never cut in two and
    missed), runs of whitespace as one space, cut to ``limit`` characters, in quotes."""
    flat = re.sub(r"\s+", " ", redact(text)).strip()
    return f"'{flat[:limit]}'" + ("..." if len(flat) > limit else "")


def chat_completion(raw, text: str):
    """The ``ChatCompletion`` in ``text``, the body of ``raw`` (the openai client's raw response of
    a 2xx reply), or ``ApiBadReply`` / ``ApiEmptyReply`` saying what the body holds instead."""
    from openai.types.chat import ChatCompletion

    where = reply_origin(raw)
    try:
        data = json.loads(text)
    except ValueError as err:
        html = "html" in raw.headers.get("content-type", "") or text.lstrip()[:1] == "<"
        what = f"an HTML page, not a chat completion ({HTML_HINT})" if html else f"a body that is not JSON ({err})"
        raise ApiBadReply(f"{where}: {what}: body {body_start(text)}") from None
    if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
        raise ApiBadReply(f"{where}: JSON without a 'choices' list, not a chat completion: body {body_start(text)}")
    if not data["choices"]:
        raise ApiEmptyReply(f"{where}: no choices (an empty 'choices' list): body {body_start(text)}")
    first = data["choices"][0]
    if not isinstance(first, dict) or not isinstance(first.get("message"), dict):
        raise ApiBadReply(f"{where}: a choice without a message: body {body_start(text)}")
    return ChatCompletion.construct(**data)


def status_error_text(err) -> str:
    """``HTTP <status>: <message>`` of an ``openai.APIStatusError``: the JSON error's ``message``,
    else the start of the body (a plain-text or HTML error page), redacted."""
    body = err.body
    message = body.get("message") if isinstance(body, dict) else None
    if isinstance(message, str) and message.strip():
        return redact(f"HTTP {err.status_code}: {message}")
    try:
        text = err.response.text
    except Exception:  # noqa: BLE001 - a body that cannot be read is reported as absent
        text = ""
    if not text.strip():
        return f"HTTP {err.status_code} with an empty body"
    return f"HTTP {err.status_code}: body {body_start(text)}"


def reasoning_text(message) -> str | None:
    """A message's reasoning trace: DeepSeek's ``reasoning_content`` or OpenRouter's ``reasoning``."""
    reasoning = getattr(message, "reasoning_content", None)
    if reasoning is None and getattr(message, "model_extra", None):
        reasoning = message.model_extra.get("reasoning_content") or message.model_extra.get("reasoning")
    return reasoning


def empty_reply(choice) -> str | None:
    """Why ``choice`` (a chat completion's first choice) holds no answer, or None when it holds one."""
    message = choice.message
    finish = choice.finish_reason
    refusal = getattr(message, "refusal", None)
    if refusal:
        return f"refused: {quoted_start(refusal)} (finish_reason {finish!r})"
    if finish == "content_filter":
        return "refused by the server's content filter (finish_reason 'content_filter')"
    content = message.content
    if (content or "").strip() or (reasoning_text(message) or "").strip() or finish == "length":
        return None
    shown = "null" if content is None else repr(content)
    return f"empty reply: content {shown}, no reasoning, finish_reason {finish!r}"


def quoted_start(text: str, limit: int = REPLY_TEXT_START) -> str:
    """``text`` quoted, cut to ``limit`` characters (with ``...`` when cut)."""
    return repr(text[:limit]) + ("..." if len(text) > limit else "")
