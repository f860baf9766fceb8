"""The LLM engine: one interface (``thinkbias.llm.types.Engine``) over llama.cpp, vLLM and
OpenAI-compatible APIs, with a persistent cache around every request.

    from thinkbias.llm import open_engine, load_model_spec
    spec = load_model_spec("config/models.yaml", "smollm2-135m")
    with open_engine(spec, cache_dir="cache") as engine:
        gens = engine.generate([Request.chat("Is the sky blue?")])

See docs/engine.md for the primitives, the cache and the measured probing costs.
"""

from __future__ import annotations

from pathlib import Path

from thinkbias.llm.registry import load_model_spec, validate_entry
from thinkbias.llm.types import (
    LETTERS,
    YES_NO,
    CandidateScores,
    Engine,
    Generation,
    ModelSpec,
    Request,
    Sampling,
)

__all__ = [
    "open_engine",
    "load_model_spec",
    "validate_entry",
    "ModelSpec",
    "Sampling",
    "Request",
    "Generation",
    "CandidateScores",
    "Engine",
    "YES_NO",
    "LETTERS",
]


def open_engine(spec: ModelSpec, cache_dir: str | Path | None, n_threads: int | None = None) -> Engine:
    """Load ``spec``'s model once and return its engine (also a context manager that closes it).

    ``cache_dir`` holds the persistent cache (``None``: in-memory only). ``n_threads`` applies to
    llama.cpp (default: ``extra.n_threads``, ``THINKBIAS_THREADS`` or every core). Local weights are
    verified first (``thinkbias.llm.weights.verified_spec``): a file that differs from its recorded
    sha256 stops here, before the model loads or the cache opens, and the engine's cache identity is
    the verified hash of the files loaded.
    """
    from thinkbias.llm.weights import verified_spec

    spec = verified_spec(spec)
    if spec.backend == "llamacpp":
        from thinkbias.llm.llamacpp import LlamaCppEngine

        return LlamaCppEngine(spec, cache_dir, n_threads=n_threads)
    if spec.backend == "openai":
        from thinkbias.llm.openai_backend import OpenAIEngine

        return OpenAIEngine(spec, cache_dir)
    if spec.backend == "vllm":
        from thinkbias.llm.vllm_backend import VllmEngine

        return VllmEngine(spec, cache_dir)
    raise ValueError(f"model '{spec.id}': unknown backend '{spec.backend}' (expected llamacpp, vllm or openai)")
