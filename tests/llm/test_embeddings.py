"""Embeddings from the embedded GGUF (llama.cpp, mean pooling), through the cache."""

import numpy as np
import pytest

from thinkbias.llm.cache import RequestCache, cache_path
from thinkbias.llm.embeddings import embed_texts

pytestmark = pytest.mark.slow


def test_embeddings_shape_cache_and_similarity(spec, tmp_path):
    texts = ["The nurse earns a good salary.", "A nurse is paid well.", "Volcanoes erupt lava.",
             "The nurse earns a good salary."]
    e = embed_texts(spec, texts, tmp_path, n_threads=1)
    assert e.shape == (4, 576) and e.dtype == np.float32
    np.testing.assert_array_equal(e[0], e[3])

    def cos(a, b):
        return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))

    assert cos(e[0], e[1]) > cos(e[0], e[2])
    assert RequestCache(cache_path(tmp_path, spec.id)).count("embed") == 3  # one entry per distinct text
    again = embed_texts(spec, texts[:2], tmp_path, n_threads=1)
    np.testing.assert_array_equal(again, e[:2])
