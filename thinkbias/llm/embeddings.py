"""Text embeddings: mean-pooled llama.cpp embeddings from a GGUF, or an OpenAI-compatible
``/embeddings`` endpoint. Every text goes through the model's persistent cache (kind ``embed``)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from thinkbias.llm.cache import RequestCache, cache_path
from thinkbias.llm.types import ModelSpec, sha256_text


def _key(spec: ModelSpec, model_name: str, text: str) -> str:
    return sha256_text("embed", spec.id, spec.weights_sha256, model_name, text)


def embed_texts(spec: ModelSpec, texts: Sequence[str], cache_dir: str | Path | None,
                batch_size: int = 32, n_threads: int | None = None) -> np.ndarray:
    """Embeddings of ``texts`` (rows follow ``texts``), shape (len(texts), dim), float32.

    llamacpp: a separate ``Llama(embedding=True)`` with mean pooling over the text's tokens (no
    chat template; unnormalised). openai: ``extra.embeddings_model`` (default ``api_model``).
    Local weights are verified before the cache opens; their verified hash is the cache identity.
    """
    from thinkbias.llm.weights import verified_spec

    spec = verified_spec(spec)
    cache = RequestCache(None if cache_dir is None else cache_path(cache_dir, spec.id))
    model_name = spec.extra.get("embeddings_model", spec.api_model) if spec.backend == "openai" else "mean"
    try:
        keys = [_key(spec, model_name, t) for t in texts]
        out: dict[int, list[float]] = {}
        missing: list[int] = []
        for i, k in enumerate(keys):
            hit = cache.get("embed", k)
            if hit is None:
                missing.append(i)
            else:
                out[i] = hit
        todo = list(dict.fromkeys(texts[i] for i in missing))
        if todo:
            if spec.backend == "llamacpp":
                fresh = _embed_llamacpp(spec, todo, n_threads)
            elif spec.backend == "openai":
                fresh = _embed_openai(spec, todo, model_name, batch_size)
            else:
                raise NotImplementedError(f"model '{spec.id}': embeddings are supported on llamacpp and openai")
            by_text = dict(zip(todo, fresh))
            for i in missing:
                out[i] = by_text[texts[i]]
                cache.put("embed", keys[i], out[i])
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.asarray([out[i] for i in range(len(texts))], dtype=np.float32)
    finally:
        cache.close()


def _embed_llamacpp(spec: ModelSpec, texts: list[str], n_threads: int | None) -> list[list[float]]:
    import llama_cpp
    from llama_cpp import Llama

    from thinkbias.llm.llamacpp import effective_threads

    threads = effective_threads(n_threads, spec.extra)
    llm = Llama(
        model_path=spec.weights, embedding=True, pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN,
        n_ctx=spec.n_ctx, n_batch=spec.n_ctx, n_ubatch=spec.n_ctx, n_threads=threads, n_threads_batch=threads,
        n_gpu_layers=int(spec.extra.get("n_gpu_layers", 0)), verbose=False,
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
        batch = texts[s:s + batch_size]
        resp = with_retries(spec, lambda timeout: client.embeddings.create(model=model_name, input=batch,
                                                                           timeout=timeout))
        out += [list(d.embedding) for d in sorted(resp.data, key=lambda d: d.index)]
    return out
