"""Text embeddings: mean-pooled llama.cpp embeddings from a GGUF, or an OpenAI-compatible
``/embeddings`` endpoint. Every text goes through the engine's cache path (``CachedEngine``: the
model's persistent cache, kind ``embed``, with its leases and counters)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from thinkbias.llm.base import CachedEngine
from thinkbias.llm.endpoint import endpoint_identity
from thinkbias.llm.types import ModelSpec


class Embedder(CachedEngine):
    """Embeddings as one more cached primitive of the engine: the model's cache file, the key
    ``_key("embed", model_name, text)`` (an ``openai`` model's also names its endpoint, as its
    generations' do), leases (a text another live process embeds now is awaited, not embedded
    twice) and the counters of every other primitive. Loads no chat model."""

    def __init__(
        self, spec: ModelSpec, cache_dir: str | Path | None, batch_size: int = 32, n_threads: int | None = None
    ):
        if spec.backend not in ("llamacpp", "openai"):
            raise NotImplementedError(f"model '{spec.id}': embeddings are supported on llamacpp and openai")
        super().__init__(spec, cache_dir)
        self.model_name = spec.extra.get("embeddings_model", spec.api_model) if spec.backend == "openai" else "mean"
        self.endpoint = endpoint_identity(spec) if spec.backend == "openai" else None
        self.batch_size, self.n_threads = batch_size, n_threads

    def _key(self, kind: str, *parts: str) -> str:
        return super()._key(kind, *((self.endpoint,) if self.endpoint else ()), *parts)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Embeddings of ``texts`` (rows follow ``texts``; a repeated text is embedded once)."""
        keys = [self._key("embed", self.model_name, t) for t in texts]
        found: dict[str, list[float]] = {}
        for key in dict.fromkeys(keys):
            hit = self.cache.get("embed", key)
            if hit is not None:
                self._count(cache_hits=1)
                found[key] = hit
        text_of = {k: t for k, t in zip(keys, texts) if k not in found}

        def run(mine: list[str]) -> None:
            for key, vector in zip(mine, self._embed_uncached([text_of[k] for k in mine])):
                self.cache.put("embed", key, vector)
                found[key] = vector

        if text_of:
            self._leased("embed", list(text_of), run, lambda key, vector: found.__setitem__(key, vector))
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.asarray([found[k] for k in keys], dtype=np.float32)

    def _embed_uncached(self, texts: list[str]) -> list[list[float]]:
        if self.spec.backend == "llamacpp":
            return _embed_llamacpp(self.spec, texts, self.n_threads)
        return _embed_openai(self.spec, texts, self.model_name, self.batch_size)


def embed_texts(
    spec: ModelSpec,
    texts: Sequence[str],
    cache_dir: str | Path | None,
    batch_size: int = 32,
    n_threads: int | None = None,
) -> np.ndarray:
    """Embeddings of ``texts`` (rows follow ``texts``), shape (len(texts), dim), float32.

    llamacpp: a separate ``Llama(embedding=True)`` with mean pooling over the text's tokens (no
    chat template; unnormalised). openai: ``extra.embeddings_model`` (default ``api_model``).
    Local weights are verified before the cache opens; their verified hash is the cache identity.
    """
    from thinkbias.llm.weights import verified_spec

    with Embedder(verified_spec(spec), cache_dir, batch_size, n_threads) as embedder:
        return embedder.embed(texts)


def _embed_llamacpp(spec: ModelSpec, texts: list[str], n_threads: int | None) -> list[list[float]]:
    from thinkbias.llm.llamacpp_backends import load_cpu_backends, require_gpu_offload

    load_cpu_backends(str(spec.extra.get("cpu_variant") or ""))
    require_gpu_offload(spec)
    import llama_cpp
    from llama_cpp import Llama

    from thinkbias.llm.llamacpp import effective_threads

    threads = effective_threads(n_threads, spec.extra)
    llm = Llama(
        model_path=spec.weights,
        embedding=True,
        pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN,
        n_ctx=spec.n_ctx,
        n_batch=spec.n_ctx,
        n_ubatch=spec.n_ctx,
        n_threads=threads,
        n_threads_batch=threads,
        n_gpu_layers=int(spec.extra.get("n_gpu_layers", 0)),
        verbose=False,
    )
    try:
        # one text per call: results then never depend on which texts share a batch
        return [[float(x) for x in llm.embed(t, normalize=False, truncate=True)] for t in texts]
    finally:
        llm.close()


def _embed_openai(spec: ModelSpec, texts: list[str], model_name: str, batch_size: int) -> list[list[float]]:
    from thinkbias.llm.openai_backend import make_client, with_retries

    client = make_client(spec)
    out: list[list[float]] = []
    for s in range(0, len(texts), batch_size):
        batch = texts[s : s + batch_size]
        resp = with_retries(
            spec, lambda timeout: client.embeddings.create(model=model_name, input=batch, timeout=timeout)
        )
        out += [list(d.embedding) for d in sorted(resp.data, key=lambda d: d.index)]
    return out
