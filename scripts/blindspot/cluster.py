"""Seeded KMeans over the input embeddings; representatives and member ranks.

Computes `thinkbias.blindspot.clusters:cluster_inputs`.
"""

import numpy as np
import pandas as pd

from thinkbias.blindspot.clusters import cluster_inputs
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as logger:
    p = snakemake.params
    ids = pd.read_parquet(snakemake.input.inputs, columns=["input_id"])["input_id"].tolist()
    members = cluster_inputs(ids, np.load(snakemake.input.embeddings), p.n_clusters, p.seed)
    logger.info("cluster sizes: " + ", ".join(str(n) for n in members.groupby("cluster").size()))
    members.to_parquet(snakemake.output[0], index=False)
