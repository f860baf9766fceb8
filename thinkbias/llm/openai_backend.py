"""The ``openai`` backend: any OpenAI-compatible server or API (DeepSeek, OpenAI, a local
llama.cpp or vLLM server), for reasoning APIs and autoraters.

- The API key is read only from the environment variable named by ``spec.api_key_env``; it never
  appears in cache keys, outputs, logs or Snakemake params. A local server needs no key.
- The endpoint (``api_base``, normalised: ``thinkbias.llm.endpoint``) is part of every cache key,
  so a registry id pointed at another server never reuses the first server's answers.
  The key is registered with ``thinkbias.llm.redact``: error messages, log lines and replies
  never carry it (nor any ``Bearer`` token), even from a server that echoes the request headers.
- Requests run with bounded concurrency (``extra.max_concurrency``, default 4).
- 429, 408, 409, 5xx, timeouts and connection errors are retried by tenacity under a
  ``RetryPolicy``: per-attempt timeout (``extra.timeout_s`` 600), retries (``extra.max_retries``
  6), a total budget per request (``extra.retry_budget_s`` 1200), waits honouring ``Retry-After``
  else exponential backoff with jitter (``extra.backoff_s`` 1, ``extra.backoff_max_s`` 60). Each
  wait is logged and counted (``stats.retries``, ``stats.retry_wait_s``); then
  ``ApiRetriesExhausted`` names the model, the URL and the attempts. Finished requests are cached
  one by one, so a rerun after a failure resumes.
- DeepSeek-style ``reasoning_content`` becomes ``Generation.thinking`` and ``content`` the answer.
- A reply with no answer in it (no choices, ``content: null`` and no reasoning, a refusal, a
  content filter; ``thinkbias.llm.api_reply``) is never cached: it is counted
  (``stats.empty_replies``) and retried like a 5xx, and the request fails when every attempt
  comes back empty. A 2xx reply that is not a chat completion (not JSON, an HTML page) fails at
  once (``ApiRequestFailed``); every error names the model, the URL, the HTTP status and the start
  of the body (redacted), and a stop before the retries are spent says why (a ``Retry-After``
  past the budget). Durations in messages are rounded to 0.1 s.
- A reply body is streamed and read with a cap (``api_reply.read_reply``): one longer than its
  request's ``max_tokens`` allows (``api_reply.reply_byte_limit``: 256 bytes per token + 1 MiB)
  is refused as soon as it passes the limit, and one cut off half-way says how many bytes arrived;
  both are retried, then fail naming the bytes, and are never cached.
- Scoring uses ``logprobs`` + ``top_logprobs`` with ``max_tokens=1`` where the server supports it
  (``extra.supports_logprobs``, default true). Probing prefixes needs token-level prompts, which chat
  APIs do not offer: it raises ``NotImplementedError`` (probe on a llamacpp or vllm model).
"""

from __future__ import annotations

import email.utils
import json
import logging
import os
import random
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Callable, TypeVar

from thinkbias.llm.api_reply import (
    ApiBadReply,
    ApiBrokenReply,
    ApiEmptyReply,
    chat_completion,
    empty_reply,
    read_reply,
    reasoning_text,
    status_error_text,
)
from thinkbias.llm.base import CachedEngine
from thinkbias.llm.candidates import scores_from_top_logprobs
from thinkbias.llm.endpoint import api_base_url, endpoint_identity
from thinkbias.llm.redact import redact, redact_secrets, register_secret
from thinkbias.llm.strict_schema import strict_schema
from thinkbias.llm.thinking import split_thinking
from thinkbias.llm.types import CandidateScores, Generation, ModelSpec, Request

RETRY_STATUS = {408, 409, 429}
DEFAULT_MAX_CONCURRENCY = 4  # requests in flight at once without extra.max_concurrency
T = TypeVar("T")
log = logging.getLogger(__name__)


class ApiRetriesExhausted(RuntimeError):
    """Every attempt of one request failed with a retryable error, or its retry budget ran out."""


class ApiRequestFailed(RuntimeError):
    """The API answered one request with an error that retrying cannot fix (e.g. 400, 401, 404)."""


@dataclass(frozen=True)
class RetryPolicy:
    """How long one request may take, from ``spec.extra`` (seconds; defaults in brackets).

    ``timeout_s`` [600] bounds one attempt (no reply byte for that long: a non-streamed reasoning
    reply of several thousand tokens takes minutes, and 10 min is the openai client's own
    default); ``connect_timeout_s`` [10] the TCP/TLS connect. ``max_retries`` [6] attempts follow
    the first. ``retry_budget_s`` [1200] bounds the whole request, attempts and waits included:
    no wait or attempt starts past it and each attempt's timeout is cut to what is left, so a hung
    server fails after 20 min (two full attempts), not after 7 x 10 min. Waits grow as
    ``backoff_s * 2**n`` [1] capped at ``backoff_max_s`` [60] with jitter, or follow the server's
    ``Retry-After`` / ``retry-after-ms`` when it sends one.
    """

    timeout_s: float = 600.0
    connect_timeout_s: float = 10.0
    max_retries: int = 6
    retry_budget_s: float = 1200.0
    backoff_s: float = 1.0
    backoff_max_s: float = 60.0

    @classmethod
    def of(cls, spec: ModelSpec) -> "RetryPolicy":
        """The policy of ``spec`` (``extra`` keys named like the fields); a bad value names its key."""
        values = {}
        for f in fields(cls):
            if f.name not in spec.extra:
                continue
            raw = spec.extra[f.name]
            try:
                value = int(raw) if f.type == "int" else float(raw)
            except (TypeError, ValueError):
                value = -1
            if isinstance(raw, bool) or value < 0 or (value == 0 and f.name != "max_retries"):
                raise ValueError(
                    f"model '{spec.id}': extra.{f.name} = {raw!r} must be a positive number"
                    f"{' (0 allowed)' if f.name == 'max_retries' else ''}"
                )
            values[f.name] = value
        return cls(**values)


def api_url(spec: ModelSpec) -> str:
    """The base URL requests go to (for messages)."""
    if spec.api_base:
        return spec.api_base
    return f"{api_base_url(spec)} (api_base is empty: OPENAI_BASE_URL, else the OpenAI API)"


def make_client(spec: ModelSpec):
    """An ``openai.OpenAI`` client for ``spec``: key from the environment (registered for
    redaction), client-side retries off (``with_retries`` retries, with a total budget)."""
    from openai import OpenAI

    key = None
    if spec.api_key_env:
        key = os.environ.get(spec.api_key_env)
        if not key:
            state = "is not set" if key is None else "is set but empty"
            raise RuntimeError(
                f"model '{spec.id}': environment variable {spec.api_key_env} {state} "
                "(API keys are read only from the environment)"
            )
        register_secret(key)
    policy = RetryPolicy.of(spec)
    return OpenAI(
        base_url=api_base_url(spec),
        api_key=key or "no-key-needed",
        max_retries=0,
        timeout=attempt_timeout(policy, policy.timeout_s),
    )


def attempt_timeout(policy: RetryPolicy, seconds: float):
    """The ``openai.Timeout`` of one attempt allowed ``seconds`` (connect within ``connect_timeout_s``)."""
    from openai import Timeout

    return Timeout(seconds, connect=min(seconds, policy.connect_timeout_s))


def is_retryable(err: BaseException) -> bool:
    """429/408/409, 5xx, timeouts, connection failures, empty, cut-off and oversized replies are
    worth retrying; other errors are not."""
    import openai

    if isinstance(err, (ApiEmptyReply, ApiBrokenReply)):
        return True
    if isinstance(err, (openai.APITimeoutError, openai.APIConnectionError)):
        return True
    if isinstance(err, openai.APIStatusError):
        return err.status_code in RETRY_STATUS or err.status_code >= 500
    return False


def retry_after_s(err: BaseException) -> float | None:
    """The wait a server asked for in ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP
    date) of an error response, or None."""
    response = getattr(err, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    try:
        if headers.get("retry-after-ms"):
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
        value = headers.get("retry-after")
        if not value:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def backoff_delay(attempt: int, base_s: float, max_s: float, rng: random.Random) -> float:
    """Exponential backoff with jitter: ``min(max_s, base_s * 2**attempt)`` scaled by U(0.5, 1)."""
    return min(max_s, base_s * (2**attempt)) * (0.5 + 0.5 * rng.random())


def duration(value: float) -> str:
    """A duration for messages, rounded to 0.1 s (``4.8 s``, ``30.0 s``)."""
    return f"{value:.1f} s"


def describe_error(err: BaseException, timeout_s: float | None = None) -> str:
    """A short redacted account of an API error (status and message, or the timeout)."""
    import openai

    if isinstance(err, openai.APITimeoutError):
        return f"no reply within {duration(timeout_s)} (timeout)" if timeout_s else "timeout"
    if isinstance(err, (ApiEmptyReply, ApiBadReply, ApiBrokenReply)):
        return redact(str(err))
    if isinstance(err, openai.APIStatusError):
        return status_error_text(err)
    return redact(f"{type(err).__name__}: {err}")


def budget_stop(err: BaseException | None, policy: RetryPolicy, elapsed_s: float) -> str:
    """Why retrying stopped before ``max_retries`` were spent: the next wait would end past the
    retry budget (the server's ``Retry-After``, or the backoff)."""
    left = max(0.0, policy.retry_budget_s - elapsed_s)
    budget = f"extra.retry_budget_s {policy.retry_budget_s:g}"
    asked = None if err is None else retry_after_s(err)
    if asked is not None:
        return (
            f"not retried: the server asked to wait {duration(asked)} (Retry-After), more than the {duration(left)} "
            f"left of the retry budget ({budget})"
        )
    return f"not retried: the next backoff wait would end past the retry budget ({duration(left)} left of {budget})"


def with_retries(
    spec: ModelSpec,
    call: Callable[[object], T],
    on_attempt: Callable[[int], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
    on_wait: Callable[[float], None] | None = None,
) -> T:
    """``call(timeout)`` under ``spec``'s ``RetryPolicy`` (tenacity): retryable errors are retried
    after a wait (``Retry-After`` when the server gives one), each attempt gets the per-attempt
    timeout cut to the budget left. ``on_attempt(i)`` runs before attempt i, ``on_wait(s)`` before
    each wait; every wait is logged. Raises ``ApiRetriesExhausted`` (retries or budget spent) or
    ``ApiRequestFailed`` (an error retrying cannot fix), both redacted and naming the model, the
    URL and the attempts, without the original exception chained (its text may hold the key)."""
    from tenacity import RetryError, Retrying, retry_if_exception, stop_after_attempt, stop_before_delay

    policy = RetryPolicy.of(spec)
    rng = random.Random()
    start = time.monotonic()
    timeouts: list[float] = []

    def wait(state) -> float:
        asked = retry_after_s(state.outcome.exception())
        return (
            asked
            if asked is not None
            else backoff_delay(state.attempt_number - 1, policy.backoff_s, policy.backoff_max_s, rng)
        )

    def before_sleep(state) -> None:
        wait_s = state.next_action.sleep
        if on_wait:
            on_wait(wait_s)
        err = state.outcome.exception()
        source = "Retry-After" if retry_after_s(err) is not None else "backoff"
        log.warning(
            "model '%s' at %s: attempt %d/%d failed (%s); retrying in %s (%s)",
            spec.id,
            api_url(spec),
            state.attempt_number,
            policy.max_retries + 1,
            describe_error(err, timeouts[-1]),
            duration(wait_s),
            source,
        )

    retrying = Retrying(
        retry=retry_if_exception(is_retryable),
        stop=stop_after_attempt(policy.max_retries + 1) | stop_before_delay(policy.retry_budget_s),
        wait=wait,
        before_sleep=before_sleep,
        sleep=sleep,
        reraise=False,
    )
    error: type[RuntimeError] = ApiRetriesExhausted
    try:
        for attempt in retrying:
            with attempt:
                if on_attempt:
                    on_attempt(attempt.retry_state.attempt_number - 1)
                left = policy.retry_budget_s - (time.monotonic() - start)
                timeouts.append(max(0.001, min(policy.timeout_s, left)))
                return call(attempt_timeout(policy, timeouts[-1]))
        raise AssertionError("unreachable: tenacity returns or raises")
    except RetryError as err:
        elapsed, last = time.monotonic() - start, err.last_attempt.exception()
        failure = (
            f"{err.last_attempt.attempt_number} attempts in {duration(elapsed)} failed "
            f"(extra.max_retries {policy.max_retries}, extra.retry_budget_s {policy.retry_budget_s:g}, "
            f"extra.timeout_s {policy.timeout_s:g}); last error: {describe_error(last, timeouts[-1])}"
        )
        if err.last_attempt.attempt_number <= policy.max_retries:  # the budget stopped it, not the count
            failure += f"; {budget_stop(last, policy, elapsed)}"
    except Exception as err:  # noqa: BLE001 - an API error is re-raised redacted, anything else as is
        import openai

        if not isinstance(err, (openai.APIError, ApiBadReply)):
            raise
        error = ApiRequestFailed
        failure = f"attempt {len(timeouts)} failed and cannot be retried: {describe_error(err, timeouts[-1])}"
    # raised here, outside the except blocks, so that no traceback chains the unredacted error
    raise error(redact(f"model '{spec.id}' ({spec.api_model}) at {api_url(spec)}: {failure}"))


def chat_messages(spec: ModelSpec, request: Request) -> list[dict]:
    """The ``messages`` sent for ``request``. A prefill needs ``extra.prefill: assistant_prefix``
    (DeepSeek's beta prefix completion: a trailing assistant message with ``prefix: true``)."""
    messages = [{"role": r, "content": c} for r, c in request.messages]
    if request.prefill:
        if spec.extra.get("prefill") != "assistant_prefix":
            raise ValueError(
                f"model '{spec.id}': the openai backend cannot pre-fill the assistant turn "
                "(set extra.prefill: assistant_prefix for servers with prefix completion)"
            )
        messages.append({"role": "assistant", "content": request.prefill, "prefix": True})
    return messages


OPENAI_REASONING_PREFIXES = ("o1", "o3", "o4", "gpt-5")


def is_openai_reasoning_model(spec: ModelSpec) -> bool:
    """OpenAI's reasoning models (o1/o3/o4/gpt-5 families on api.openai.com) take
    ``max_completion_tokens`` and reject sampling parameters."""
    return "api.openai.com" in spec.api_base and spec.api_model.startswith(OPENAI_REASONING_PREFIXES)


def extra_body(spec: ModelSpec) -> dict:
    """Server-specific request fields: ``extra.extra_body``, plus OpenRouter's ``extra.provider``."""
    body = dict(spec.extra.get("extra_body") or {})
    if "provider" in spec.extra:
        body["provider"] = spec.extra["provider"]
    return body


def response_format(spec: ModelSpec, schema: dict) -> dict:
    """The ``response_format`` constraining a reply to ``schema`` (in strict form). OpenAI, vLLM and
    OpenRouter take ``json_schema``; llama-cpp-python's server only knows ``json_object`` with a
    ``schema`` beside it (``extra.response_format: json_object``)."""
    strict = strict_schema(schema)
    if spec.extra.get("response_format", "json_schema") == "json_object":
        return {"type": "json_object", "schema": strict}
    return {"type": "json_schema", "json_schema": {"name": "answer", "schema": strict, "strict": True}}


def chat_kwargs(spec: ModelSpec, request: Request) -> dict:
    """Keyword arguments of ``chat.completions.create`` for ``request`` (pure; unit-tested).

    ``extra.token_param`` names the length limit (``max_tokens``, or ``max_completion_tokens``, the
    default for OpenAI reasoning models); ``extra.send_sampling: false`` (the default for OpenAI
    reasoning models) omits temperature/top_p for APIs that reject them. The seed is always sent.
    ``extra.extra_body`` / ``extra.provider`` go to the request body.
    """
    s = request.sampling
    reasoning = is_openai_reasoning_model(spec)
    token_param = spec.extra.get("token_param", "max_completion_tokens" if reasoning else "max_tokens")
    kw: dict = {
        "model": spec.api_model,
        "messages": chat_messages(spec, request),
        token_param: s.max_tokens,
        "seed": s.seed,
    }
    if spec.extra.get("send_sampling", not reasoning):
        kw["temperature"] = s.temperature
        kw["top_p"] = s.top_p
    if s.stop:
        kw["stop"] = list(s.stop)[:4]
    if s.json_schema is not None:
        kw["response_format"] = response_format(spec, s.json_schema)
    if extra_body(spec):
        kw["extra_body"] = extra_body(spec)
    return kw


TOKEN_PARAMS = ("max_completion_tokens", "max_tokens")


def token_limit(kw: dict) -> int:
    """The token limit of a request's ``chat.completions.create`` keywords (``chat_kwargs``)."""
    return int(next(kw[k] for k in TOKEN_PARAMS if k in kw))


def generation_from_response(spec: ModelSpec, request: Request, resp) -> Generation:
    """A ``Generation`` from a chat completion (``reasoning_content`` -> thinking, ``content`` -> answer)."""
    choice = resp.choices[0]
    msg = choice.message
    content = redact_secrets(msg.content or "")  # a server echoing the key never gets it into the cache
    reasoning = reasoning_text(msg)
    reasoning = None if reasoning is None else redact_secrets(reasoning)
    usage = getattr(resp, "usage", None)
    pt = int(getattr(usage, "prompt_tokens", 0) or 0)
    ct = int(getattr(usage, "completion_tokens", 0) or 0)
    if reasoning is not None:
        text = f"{reasoning}{spec.think_close}\n\n{content}"
        return Generation(
            text=text,
            thinking=reasoning.strip("\n"),
            answer=content.strip(),
            prompt_tokens=pt,
            completion_tokens=ct,
            finish_reason=choice.finish_reason or "",
        )
    split = split_thinking(request.prefill + content, spec.think_open, spec.think_close)
    return Generation(
        text=content,
        thinking=split.thinking,
        answer=split.answer,
        prompt_tokens=pt,
        completion_tokens=ct,
        finish_reason=choice.finish_reason or "",
    )


class OpenAIEngine(CachedEngine):
    """``Engine`` over an OpenAI-compatible chat completions API."""

    def __init__(self, spec: ModelSpec, cache_dir: str | Path | None):
        super().__init__(spec, cache_dir)
        self.endpoint = endpoint_identity(spec)
        self.client = make_client(spec)
        self.max_concurrency = max(1, int(spec.extra.get("max_concurrency", DEFAULT_MAX_CONCURRENCY)))

    def render(self, request: Request) -> str:
        # the prompt identity in cache keys: API model name, messages and prefill (never the key)
        return json.dumps(
            {
                "api_model": self.spec.api_model,
                "messages": request.messages,
                "prefill": request.prefill,
                "extra_body": extra_body(self.spec),
            },
            sort_keys=True,
            separators=(",", ":"),
        )

    def count_tokens(self, text: str) -> int:
        raise NotImplementedError(
            f"model '{self.spec.id}': the openai backend has no tokenizer; use Generation.completion_tokens"
        )

    def _key(self, kind: str, *parts: str) -> str:
        # the endpoint is part of an API model's identity: another server's answers are never reused
        return super()._key(kind, self.endpoint, *parts)

    def _attempt(self, attempt: int) -> None:
        self._count(requests=1, retries=1 if attempt else 0)

    def _waited(self, seconds: float) -> None:
        self._count(retry_wait_s=seconds)

    def _create(self, kw: dict, answer: bool = False):
        """One chat completion under the retry policy, counted in ``stats``, its body read with the
        cap of ``read_reply`` (an oversized or cut-off body is retried, never returned). ``answer``:
        the reply must hold an answer (``empty_reply``); an empty one is counted and retried."""

        def call(timeout):
            create = self.client.chat.completions.with_streaming_response.create
            with create(**kw, timeout=timeout) as raw:  # the body is read by read_reply, capped
                text = read_reply(raw, token_limit(kw))
            try:
                resp = chat_completion(raw, text)
                why = empty_reply(resp.choices[0]) if answer else None
                if why is not None:
                    raise ApiEmptyReply(why)
            except ApiEmptyReply:
                self._count(empty_replies=1)
                raise
            return resp

        return with_retries(self.spec, call, self._attempt, on_wait=self._waited)

    def _one(self, request: Request) -> Generation:
        resp = self._create(chat_kwargs(self.spec, request), answer=True)
        gen = generation_from_response(self.spec, request, resp)
        self._count(generated_tokens=gen.completion_tokens, prompt_tokens=gen.prompt_tokens)
        return gen

    def _generate_uncached(self, items, done) -> None:
        if self.max_concurrency == 1 or len(items) == 1:
            for j, (req, _) in enumerate(items):
                done(j, self._one(req))
            return
        with ThreadPoolExecutor(self.max_concurrency) as pool:
            pending = {pool.submit(self._one, req): j for j, (req, _) in enumerate(items)}
            error: BaseException | None = None
            while pending:
                finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                for fut in finished:
                    j = pending.pop(fut)
                    if fut.cancelled():
                        continue
                    if fut.exception() is not None:
                        if error is None:
                            error = fut.exception()
                            for other in pending:
                                other.cancel()
                        continue
                    done(j, fut.result())  # cache write from this thread, as soon as it is known
            if error is not None:
                raise error

    def _score_uncached(self, request, rendered, candidates) -> CandidateScores:
        if not self.spec.extra.get("supports_logprobs", True):
            raise NotImplementedError(f"model '{self.spec.id}': this API does not return logprobs, so it cannot score")
        n_top = int(self.spec.extra.get("top_logprobs", 20))
        kw = chat_kwargs(self.spec, request)
        token_param = next(k for k in TOKEN_PARAMS if k in kw)
        kw.update({token_param: 1, "temperature": 0.0, "logprobs": True, "top_logprobs": n_top})
        resp = self._create(kw)
        lp = resp.choices[0].logprobs
        if lp is None or not lp.content:
            raise NotImplementedError(f"model '{self.spec.id}': the server returned no logprobs")
        top = {t.token: t.logprob for t in (lp.content[0].top_logprobs or [])}
        return scores_from_top_logprobs(top, {k: list(v) for k, v in candidates.items()})

    def _probe_uncached(self, request, rendered, trace, cuts, cue, candidates):
        raise NotImplementedError(
            f"model '{self.spec.id}': probing trace prefixes needs token-level prompts; "
            "run it on a llamacpp or vllm model"
        )

    def build_info(self) -> dict:
        return {"backend": "openai", "endpoint": api_url(self.spec), "model": self.spec.api_model}

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            super().close()
