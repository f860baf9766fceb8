"""Embeddings of the task inputs (newlines replaced by spaces): a registry model, or TF-IDF + SVD.

Computes `thinkbias.llm.embeddings:embed_texts`, or `sklearn.decomposition:TruncatedSVD` of
`sklearn.feature_extraction.text:TfidfVectorizer` for `tfidf`.
"""

import numpy as np
import pandas as pd

from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0], metrics=snakemake.output.metrics) as logger:
    p = snakemake.params
    df = pd.read_parquet(snakemake.input.inputs)
    texts = [" ".join(str(t).split()) for t in df["text"]]
    if p.embedder == "tfidf":
        from sklearn.decomposition import TruncatedSVD
        from sklearn.feature_extraction.text import TfidfVectorizer

        x = TfidfVectorizer(min_df=1).fit_transform(texts)
        dim = max(1, min(64, x.shape[1] - 1, x.shape[0] - 1))
        emb = TruncatedSVD(n_components=dim, random_state=p.seed).fit_transform(x)
    else:
        from thinkbias.llm import load_model_spec
        from thinkbias.llm.embeddings import embed_texts

        weights = snakemake.input.weights[0] if snakemake.input.weights else ""
        spec = load_model_spec(p.registry, p.embedder, weights=weights)
        emb = np.asarray(embed_texts(spec, texts, p.cache_dir))
    logger.info(f"{len(texts)} embeddings of dimension {emb.shape[1]} from {p.embedder}")
    np.save(snakemake.output[0], emb)
