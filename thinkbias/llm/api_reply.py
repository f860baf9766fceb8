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
"""

from __future__ import annotations

import json
import re

from thinkbias.llm.redact import redact

REPLY_TEXT_START = 200  # characters of a refusal quoted in messages
BODY_START = 200  # characters of a reply body quoted in messages
HTML_HINT = "api_base should be the API's base URL, which for most servers ends in /v1"


class ApiEmptyReply(RuntimeError):
    """The server answered with no content, no reasoning and no budget cut, or refused (retryable)."""


class ApiBadReply(RuntimeError):
    """The server answered a successful status with something that is not a chat completion."""


def body_start(text: str, limit: int = BODY_START) -> str:
    """The start of a reply body for a message: redacted first (a key is never cut in two and
    missed), runs of whitespace as one space, cut to ``limit`` characters, in quotes."""
    flat = re.sub(r"\s+", " ", redact(text)).strip()
    return f"'{flat[:limit]}'" + ("..." if len(flat) > limit else "")


def chat_completion(raw):
    """The ``ChatCompletion`` in ``raw`` (the openai client's raw response of a 2xx reply), or
    ``ApiBadReply`` / ``ApiEmptyReply`` saying what the body holds instead."""
    from openai.types.chat import ChatCompletion

    text = raw.text
    where = f"HTTP {raw.status_code} from {raw.method} {raw.url}"
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
