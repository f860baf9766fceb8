"""Value types shared by every LLM backend: model specs, sampling, requests, results and the engine counters.

Every study talks to models through these types and the `Engine` protocol, never through a
backend library directly, so the same study code runs on llama.cpp, vLLM or an OpenAI-compatible API.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Callable, Literal, Protocol, Sequence

Backend = Literal["llamacpp", "vllm", "openai"]
ThinkingControl = Literal["native", "prefill", "prompt", "none"]


@dataclass(frozen=True)
class ModelSpec:
    """One entry of the model registry (config/models.yaml), resolved for a run.

    Attributes:
        id: registry key, e.g. ``smollm2-135m``.
        backend: which engine runs it.
        weights: local path of the weights (GGUF file, or HF snapshot folder for vLLM); empty for APIs.
        weights_sha256: identity of the weights, part of every cache key. The registry gives the
            declared one (first file's pinned sha256, a vLLM pin's revision, a quantization's
            settings); ``thinkbias.llm.weights.verified_spec`` replaces it, before a model loads,
            by the verified sha256 of the files loaded (one file: its sha256).
        files: the registry's local weight files as (name, pinned sha256 or ""), first one loaded.
        chat_template: Jinja chat template overriding the one in the weights' metadata, or None.
        thinking: how the think arm is produced: ``native`` (the model opens ``<think>`` itself),
            ``prefill`` (the assistant turn is pre-filled with ``think_open``), ``prompt`` (the
            instruction asks for step-by-step reasoning inside the tags), ``none`` (no thinking arm).
        think_open / think_close: the tags that delimit a thinking trace.
        n_ctx: context length used when loading.
        gpus: GPUs the backend needs (0 for CPU llama.cpp and for APIs).
        api_base: base URL of an OpenAI-compatible server (``openai`` backend).
        api_model: model name sent to the API.
        api_key_env: name of the environment variable holding the API key (never the key itself).
        extra: backend-specific options (e.g. ``n_gpu_layers``, ``quantization``, ``gpu_memory_utilization``).
    """

    id: str
    backend: Backend
    weights: str = ""
    weights_sha256: str = ""
    files: tuple[tuple[str, str], ...] = ()
    chat_template: str | None = None
    thinking: ThinkingControl = "prefill"
    think_open: str = "<think>\n"
    think_close: str = "</think>"
    n_ctx: int = 4096
    gpus: int = 0
    api_base: str = ""
    api_model: str = ""
    api_key_env: str = ""
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Sampling:
    """Decoding parameters, always explicit (no backend default ever leaks in).

    ``temperature == 0`` means greedy. ``json_schema`` constrains the output where the backend can
    (llama.cpp grammar, vLLM guided decoding, OpenAI ``response_format``).
    """

    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0
    max_tokens: int = 256
    stop: tuple[str, ...] = ()
    json_schema: dict | None = None

    def key(self) -> str:
        """A canonical JSON string of the parameters (part of the cache key)."""
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))


@dataclass(frozen=True)
class Request:
    """A chat to complete: messages plus an optional raw assistant prefill.

    ``prefill`` is text placed at the start of the assistant turn (``<think>\\n``, an empty closed
    think block, or a truncated trace to continue); the generation continues after it.
    """

    messages: tuple[tuple[str, str], ...]  # ((role, content), ...)
    prefill: str = ""
    sampling: Sampling = Sampling()

    @staticmethod
    def chat(user: str, system: str | None = None, prefill: str = "", sampling: Sampling = Sampling()) -> "Request":
        """Build a single-turn request."""
        msgs = ((("system", system),) if system else ()) + (("user", user),)
        return Request(messages=msgs, prefill=prefill, sampling=sampling)


@dataclass(frozen=True)
class Generation:
    """The result of one request.

    ``text`` is what the model generated after the prefill; ``thinking`` and ``answer`` split the
    prefill + text at ``think_close`` (``thinking`` excludes the tags; no close tag means the whole
    text is thinking and ``answer`` is empty). ``cached`` is True when no tokens were generated now.
    """

    text: str
    thinking: str
    answer: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str
    cached: bool = False


@dataclass(frozen=True)
class CandidateScores:
    """Normalised probabilities over a candidate set at one next-token position.

    ``probs`` sums to 1 over the candidates; ``outside_mass`` is the raw probability mass that
    fell on tokens outside every candidate's variants (1 - sum of raw candidate masses).
    """

    probs: dict[str, float]
    outside_mass: float


# Candidate sets with their token variants; backends sum the probability of every variant.
YES_NO: dict[str, tuple[str, ...]] = {
    "Yes": ("Yes", " Yes", "yes", " yes", "YES", " YES"),
    "No": ("No", " No", "no", " no", "NO", " NO"),
}
LETTERS: dict[str, tuple[str, ...]] = {c: (c, " " + c, "(" + c, " (" + c) for c in "ABCD"}


@dataclass
class EngineStats:
    """Counters of the work done by this process (cache hits cost nothing).

    ``generated_tokens``: completion tokens produced by the model now; ``prompt_tokens``: prompt tokens
    evaluated now (prefill, probe cues); ``probe_tokens``: the part of ``prompt_tokens`` evaluated for
    scores and probes (local backends); ``requests``: backend calls made (HTTP attempts for APIs);
    ``cache_hits``: results served from the cache; ``cache_unverified``: those of them stored without a
    checksum (written before entries carried one: ``thinkbias.llm.cache``); ``retries``: attempts repeated after a
    retryable failure (APIs); ``retry_wait_s``: seconds spent waiting before those retries;
    ``reused_prompt_tokens``: prompt tokens whose KV cells a generation kept from the previous prompt
    instead of evaluating them (llama.cpp); ``awaited``: results another live process was generating,
    waited for instead of generated (also counted in ``cache_hits``); ``taken_over``: requests leased
    by a process that died, generated here instead; ``empty_replies``: API replies with no answer in
    them (no content nor reasoning, or a refusal), retried and never cached; ``probe_cached_tokens``:
    the part of ``probe_tokens`` the engine's prefix cache served instead of computing it (vLLM's
    ``num_cached_tokens``); ``preemptions``: times the engine evicted a running request to free KV
    cache and recomputed it later (vLLM).
    """

    generated_tokens: int = 0
    prompt_tokens: int = 0
    probe_tokens: int = 0
    reused_prompt_tokens: int = 0
    requests: int = 0
    cache_hits: int = 0
    cache_unverified: int = 0
    retries: int = 0
    retry_wait_s: float = 0.0
    awaited: int = 0
    taken_over: int = 0
    empty_replies: int = 0
    probe_cached_tokens: int = 0
    preemptions: int = 0


class Engine(Protocol):
    """What every backend offers. One engine instance = one loaded model for a whole job."""

    spec: ModelSpec
    # counters of the work done by this process: generated_tokens, prompt_tokens, probe_tokens,
    # reused_prompt_tokens, requests, cache_hits, cache_unverified, retries, retry_wait_s, awaited, taken_over,
    # empty_replies, probe_cached_tokens, preemptions
    stats: EngineStats

    def generate(
        self, requests: Sequence[Request], on_result: Callable[[int, Generation], None] | None = None
    ) -> list[Generation]:
        """Complete each request (cached; resumable). Order of results follows ``requests``.
        ``on_result(i, generation)`` is called for each index as soon as its result is known."""
        ...

    def score(self, request: Request, candidates: dict[str, Sequence[str]]) -> CandidateScores:
        """Candidate probabilities at the first position after the rendered prompt + prefill."""
        ...

    def probe(
        self,
        request: Request,
        trace: str,
        cuts: Sequence[int],
        cue: str,
        candidates: dict[str, Sequence[str]],
    ) -> list[CandidateScores]:
        """Scores after ``prompt + prefill + trace[:cut tokens] + cue`` for each cut (token index into
        the tokenised ``trace``), with computation reused across cuts. Results follow ``cuts`` order."""
        ...

    def generate_and_probe(
        self,
        request: Request,
        cut_fractions: Sequence[float],
        cue: str,
        candidates: dict[str, Sequence[str]],
        trace: str = "thinking",
    ) -> tuple[Generation, list[CandidateScores]]:
        """Generate like ``generate([request])[0]``, then probe prefixes of the generated trace at
        cuts ``floor(f * n + 1/2)`` (n = tokens of ``Generation.thinking``, or of ``Generation.text``
        with ``trace="text"``), reusing the state left by generation where the backend can. Scores
        follow ``cut_fractions`` order."""
        ...

    def score_many(self, requests: Sequence[Request], candidates: dict[str, Sequence[str]]) -> list[CandidateScores]:
        """``score`` of each request; batching backends evaluate them together."""
        ...

    def probe_many(
        self,
        probes: Sequence[tuple[Request, str, Sequence[int]]],
        cue: str,
        candidates: dict[str, Sequence[str]],
    ) -> list[list[CandidateScores]]:
        """``probe`` of each (request, trace, cuts); batching backends evaluate them together."""
        ...

    def generate_and_score_many(
        self,
        requests: Sequence[Request],
        score_requests: Sequence[Request],
        candidates: dict[str, Sequence[str]],
        on_result: Callable[[int, Generation], None] | None = None,
    ) -> list[tuple[Generation, CandidateScores]]:
        """``generate(requests)`` with ``score(score_requests[i])`` for each; on llama.cpp each score
        runs as its generation finishes, reusing the shared prompt's KV cells."""
        ...

    def scores_after_generation(self) -> bool:
        """Whether scores and probes run as each generation finishes, on its KV cells (llama.cpp)."""
        ...

    def count_tokens(self, text: str) -> int:
        """Number of tokens of ``text`` under this model's tokenizer (no special tokens)."""
        ...

    def close(self) -> None:
        """Release the model."""
        ...


def sha256_text(*parts: str) -> str:
    """Hex sha256 of the parts joined by a separator that cannot occur in them."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode("utf-8"))
        h.update(b"\x00\x1f")
    return h.hexdigest()
