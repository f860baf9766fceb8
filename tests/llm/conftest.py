"""Fixtures of the engine tests: the embedded model's spec and engines on it."""

from __future__ import annotations

from pathlib import Path

import pytest

from thinkbias.llm import load_model_spec, open_engine

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def spec(embedded_model):
    """ModelSpec of the embedded SmolLM2-135M GGUF (from the repository's registry)."""
    return load_model_spec(REPO / "config/models.yaml", "smollm2-135m", weights=str(embedded_model))


@pytest.fixture(scope="module")
def engine(spec):
    """One loaded engine per test module, with an in-memory cache."""
    with open_engine(spec, None, n_threads=1) as eng:
        yield eng


@pytest.fixture
def fresh_engine(spec):
    """A factory of engines with their own cache (``cache_dir=None``: in-memory)."""
    made = []

    def make(cache_dir=None):
        eng = open_engine(spec, cache_dir, n_threads=1)
        made.append(eng)
        return eng

    yield make
    for eng in made:
        eng.close()
