"""A chat completion checked before it becomes a result: a reply that holds no answer is an error.

An OpenAI-compatible server can answer HTTP 200 with nothing in it: ``content: null`` (or only
whitespace) and no reasoning, a ``refusal`` instead of content, or ``finish_reason:
content_filter``. Such a reply is not the model's answer to the prompt, so it is never cached:
``empty_reply`` says what is missing and the backend raises ``ApiEmptyReply``, which its retry
policy retries like a 5xx; when every attempt comes back empty the request fails loudly
(``ApiRetriesExhausted``). A reply cut off by its token budget before any text
(``finish_reason: length``) is a result like any other truncated reply and is kept.
"""

from __future__ import annotations

REPLY_TEXT_START = 200  # characters of a refusal quoted in messages


class ApiEmptyReply(RuntimeError):
    """The server answered with no content, no reasoning and no budget cut, or refused (retryable)."""


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
