"""Embeddings from the embedded GGUF (llama.cpp, mean pooling), through the cache."""

import numpy as np
import pytest

from thinkbias.llm.cache import RequestCache, cache_path
from thinkbias.llm.embeddings import Embedder, embed_texts
from thinkbias.llm.types import sha256_text

pytestmark = pytest.mark.slow


def test_embeddings_shape_cache_and_similarity(spec, tmp_path):
    texts = [
        "The nurse earns a good salary.",
        "A nurse is paid well.",
        "Volcanoes erupt lava.",
        "The nurse earns a good salary.",
    ]
    e = embed_texts(spec, texts, tmp_path, n_threads=1)
    assert e.shape == (4, 576) and e.dtype == np.float32
    np.testing.assert_array_equal(e[0], e[3])

    def cos(a, b):
        return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))

    assert cos(e[0], e[1]) > cos(e[0], e[2])
    assert RequestCache(cache_path(tmp_path, spec.id)).count("embed") == 3  # one entry per distinct text
    again = embed_texts(spec, texts[:2], tmp_path, n_threads=1)
    np.testing.assert_array_equal(again, e[:2])


def test_embeddings_share_the_engines_cache_file_keys_and_counters(spec, tmp_path):
    """The embeddings live in the model's engine cache under the engine's key (kind, model id,
    weights sha256, parts), and a second embedder counts them as cache hits."""
    from thinkbias.llm import open_engine

    texts = ["Loans to nurses.", "Loans to pilots.", "Loans to nurses."]
    with Embedder(spec, tmp_path, n_threads=1) as first:
        e = first.embed(texts)
        assert first.stats.cache_hits == 0
    with open_engine(spec, tmp_path, n_threads=1) as engine:  # the chat engine opens the same file
        stored = engine.cache.get("embed", sha256_text("embed", spec.id, spec.weights_sha256, "mean", texts[1]))
    np.testing.assert_array_equal(np.asarray(stored, dtype=np.float32), e[1])
    with Embedder(spec, tmp_path, n_threads=1) as second:
        np.testing.assert_array_equal(second.embed(texts), e)
        assert second.stats.cache_hits == 2  # two distinct texts, nothing embedded again
