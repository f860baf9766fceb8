"""The ``openai`` backend: any OpenAI-compatible server or API (DeepSeek, OpenAI, a local
llama.cpp or vLLM server), for reasoning APIs and autoraters.

- The API key is read only from the environment variable named by ``spec.api_key_env``; it never
  appears in cache keys, outputs, logs or Snakemake params. A local server needs no key.
- Requests run with bounded concurrency (``extra.max_concurrency``, default 4).
- 429, 408, 5xx, timeouts and connection errors are retried with exponential backoff and jitter
  (``extra.max_retries`` default 6, ``extra.backoff_s`` default 1.0, ``extra.backoff_max_s`` 60);
  then ``ApiRetriesExhausted`` names the model and base URL. Finished requests are cached one by one,
  so a rerun after a failure resumes.
- DeepSeek-style ``reasoning_content`` becomes ``Generation.thinking`` and ``content`` the answer.
- Scoring uses ``logprobs`` + ``top_logprobs`` with ``max_tokens=1`` where the server supports it
  (``extra.supports_logprobs``, default true). Probing prefixes needs token-level prompts, which chat
  APIs do not offer: it raises ``NotImplementedError`` (probe on a llamacpp or vllm model).
"""

from __future__ import annotations

import json
import os
import random
import time
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Callable, Mapping, Sequence

from thinkbias.llm.base import CachedEngine
from thinkbias.llm.candidates import scores_from_top_logprobs
from thinkbias.llm.strict_schema import strict_schema
from thinkbias.llm.thinking import split_thinking
from thinkbias.llm.types import CandidateScores, Generation, ModelSpec, Request

RETRY_STATUS = {408, 409, 429}


class ApiRetriesExhausted(RuntimeError):
    """Every attempt of one request failed with a retryable error."""


def make_client(spec: ModelSpec):
    """An ``openai.OpenAI`` client for ``spec`` (key from the environment; no client-side retries)."""
    from openai import OpenAI

    key = None
    if spec.api_key_env:
        key = os.environ.get(spec.api_key_env)
        if not key:
            raise RuntimeError(
                f"model '{spec.id}': environment variable {spec.api_key_env} is not set "
                "(API keys are read only from the environment)"
            )
    return OpenAI(base_url=spec.api_base or None, api_key=key or "no-key-needed", max_retries=0,
                  timeout=float(spec.extra.get("timeout_s", 600)))


def is_retryable(err: BaseException) -> bool:
    """429/408/409, 5xx, timeouts and connection failures are worth retrying; other errors are not."""
    import openai

    if isinstance(err, (openai.APITimeoutError, openai.APIConnectionError)):
        return True
    if isinstance(err, openai.APIStatusError):
        return err.status_code in RETRY_STATUS or err.status_code >= 500
    return False


def backoff_delay(attempt: int, base_s: float, max_s: float, rng: random.Random) -> float:
    """Exponential backoff with jitter: ``min(max_s, base_s * 2**attempt)`` scaled by U(0.5, 1)."""
    return min(max_s, base_s * (2 ** attempt)) * (0.5 + 0.5 * rng.random())


def with_retries(spec: ModelSpec, call: Callable, on_attempt: Callable[[int], None] | None = None,
                 sleep: Callable[[float], None] = time.sleep):
    """Run ``call()`` retrying retryable errors; ``on_attempt(i)`` before each attempt."""
    max_retries = int(spec.extra.get("max_retries", 6))
    base, cap = float(spec.extra.get("backoff_s", 1.0)), float(spec.extra.get("backoff_max_s", 60.0))
    rng = random.Random()
    for attempt in range(max_retries + 1):
        if on_attempt:
            on_attempt(attempt)
        try:
            return call()
        except Exception as err:  # noqa: BLE001 - classified below
            if not is_retryable(err):
                raise
            if attempt == max_retries:
                raise ApiRetriesExhausted(
                    f"model '{spec.id}' ({spec.api_model}) at {spec.api_base or 'the default OpenAI API'}: "
                    f"{max_retries + 1} attempts failed; last error: {type(err).__name__}: {err}"
                ) from err
            sleep(backoff_delay(attempt, base, cap, rng))
    raise AssertionError("unreachable")


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
    kw: dict = {"model": spec.api_model, "messages": chat_messages(spec, request), token_param: s.max_tokens,
                "seed": s.seed}
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


def generation_from_response(spec: ModelSpec, request: Request, resp) -> Generation:
    """A ``Generation`` from a chat completion (``reasoning_content`` -> thinking, ``content`` -> answer)."""
    choice = resp.choices[0]
    msg = choice.message
    content = msg.content or ""
    reasoning = getattr(msg, "reasoning_content", None)
    if reasoning is None and getattr(msg, "model_extra", None):  # OpenRouter names it "reasoning"
        reasoning = msg.model_extra.get("reasoning_content") or msg.model_extra.get("reasoning")
    usage = getattr(resp, "usage", None)
    pt = int(getattr(usage, "prompt_tokens", 0) or 0)
    ct = int(getattr(usage, "completion_tokens", 0) or 0)
    if reasoning is not None:
        text = f"{reasoning}{spec.think_close}\n\n{content}"
        return Generation(text=text, thinking=reasoning.strip("\n"), answer=content.strip(), prompt_tokens=pt,
                          completion_tokens=ct, finish_reason=choice.finish_reason or "")
    split = split_thinking(request.prefill + content, spec.think_open, spec.think_close)
    return Generation(text=content, thinking=split.thinking, answer=split.answer, prompt_tokens=pt,
                      completion_tokens=ct, finish_reason=choice.finish_reason or "")


class OpenAIEngine(CachedEngine):
    """``Engine`` over an OpenAI-compatible chat completions API."""

    def __init__(self, spec: ModelSpec, cache_dir: str | Path | None):
        super().__init__(spec, cache_dir)
        self.client = make_client(spec)
        self.max_concurrency = max(1, int(spec.extra.get("max_concurrency", 4)))

    def render(self, request: Request) -> str:
        # the prompt identity in cache keys: API model name, messages and prefill (never the key)
        return json.dumps({"api_model": self.spec.api_model, "messages": request.messages,
                           "prefill": request.prefill, "extra_body": extra_body(self.spec)},
                          sort_keys=True, separators=(",", ":"))

    def count_tokens(self, text: str) -> int:
        raise NotImplementedError(f"model '{self.spec.id}': the openai backend has no tokenizer; "
                                  "use Generation.completion_tokens")

    def _attempt(self, attempt: int) -> None:
        self._count(requests=1, retries=1 if attempt else 0)

    def _one(self, request: Request) -> Generation:
        resp = with_retries(self.spec, lambda: self.client.chat.completions.create(**chat_kwargs(self.spec, request)),
                            self._attempt)
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
        token_param = next(k for k in ("max_completion_tokens", "max_tokens") if k in kw)
        kw.update({token_param: 1, "temperature": 0.0, "logprobs": True, "top_logprobs": n_top})
        resp = with_retries(self.spec, lambda: self.client.chat.completions.create(**kw), self._attempt)
        lp = resp.choices[0].logprobs
        if lp is None or not lp.content:
            raise NotImplementedError(f"model '{self.spec.id}': the server returned no logprobs")
        top = {t.token: t.logprob for t in (lp.content[0].top_logprobs or [])}
        return scores_from_top_logprobs(top, {k: list(v) for k, v in candidates.items()})

    def _probe_uncached(self, request, rendered, trace, cuts, cue, candidates):
        raise NotImplementedError(f"model '{self.spec.id}': probing trace prefixes needs token-level prompts; "
                                  "run it on a llamacpp or vllm model")

    def close(self) -> None:
        try:
            self.client.close()
        finally:
            super().close()
