"""A model role: one LLM step of a study (a rewrite, a judge, a target...) with its model and sampling.

The workflow hands each model job its role as one params dict (``role_params`` in rules/common.smk:
model, registry, cache dir, seed, temperature, top_p, max_tokens, constrained); the job's weights
come as an input. :class:`ModelRole` builds the step's requests, each seeded from the master seed
and the request's identity (:func:`request_seed`), and :func:`run_role` runs them on the role's
model, loaded once, with the progress lines and closing metrics line of
:class:`thinkbias.llm.run.Progress`. A request's text, seed and sampling decide its cache key, so a
step that keeps its prompt and seed parts keeps its cached results.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Sequence

from thinkbias.llm.run import Progress, run_requests
from thinkbias.llm.types import Generation, Request, Sampling, sha256_text


def request_seed(seed: int, *parts: str) -> int:
    """A per-request sampling seed derived from the master seed and the request's identity."""
    return int(sha256_text(str(seed), *parts)[:8], 16) & 0x7FFFFFFF


@dataclass(frozen=True)
class ModelRole:
    """What one LLM step runs: the registry ``model`` (with its local ``weights`` path, "" for
    API models), where the cache lives, the master ``seed`` and the step's sampling. ``constrained``
    asks for JSON-schema constrained replies where the step has a schema. ``n_threads`` is passed to
    the engine (None: the engine's default, every core for llama.cpp). Sampling defaults are
    :class:`Sampling`'s, for steps that build their own sampling."""

    model: str
    registry: str
    cache_dir: str
    seed: int
    temperature: float = 0.0
    max_tokens: int = 256
    top_p: float = 1.0
    constrained: bool = False
    weights: str = ""
    n_threads: int | None = None

    @classmethod
    def from_params(cls, params: Any, weights: Sequence[str] = (), n_threads: int | None = None) -> "ModelRole":
        """The role of a job from its params (attributes ``model, registry, cache_dir, seed`` and
        the step's ``temperature, top_p, max_tokens, constrained`` where it has them, as
        rules/common.smk:model_role gives them) and its weight inputs (the first is loaded)."""
        fields = ("model", "registry", "cache_dir", "seed", "temperature", "max_tokens", "top_p", "constrained")
        values = {k: getattr(params, k) for k in fields if hasattr(params, k)}
        return cls(**values, weights=weights[0] if weights else "", n_threads=n_threads)

    def sampling(self, *parts: str, json_schema: dict | None = None) -> Sampling:
        """The sampling of the request identified by ``parts`` (the step's label first, e.g.
        ``"dedup", "3", "5"``; target responses use the item alone): seeded by
        :func:`request_seed`; ``json_schema`` applies only when the role is constrained."""
        return Sampling(
            temperature=self.temperature,
            top_p=self.top_p,
            max_tokens=self.max_tokens,
            seed=request_seed(self.seed, *parts),
            json_schema=json_schema if self.constrained else None,
        )

    def chat(self, prompt: str, *parts: str, json_schema: dict | None = None) -> Request:
        """A single-user-message request identified by ``parts`` (see :meth:`sampling`)."""
        return Request.chat(prompt, sampling=self.sampling(*parts, json_schema=json_schema))


def run_role(role: ModelRole, requests: Sequence[Request], logger: logging.Logger) -> list[Generation]:
    """Load the role's model once and run ``requests`` (cached, with progress lines in the log and
    the closing ``generated_tokens`` line; zero counters and no model load when there is nothing to
    run). Results follow ``requests`` order."""
    if not requests:
        logger.info("no requests to run")
        Progress(0, logger).finish()
        return []
    from thinkbias.llm import load_model_spec, open_engine

    spec = load_model_spec(role.registry, role.model, weights=role.weights)
    with open_engine(spec, role.cache_dir, n_threads=role.n_threads) as engine:
        return run_requests(engine, requests, logger)
