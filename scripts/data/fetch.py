"""Fetch one manifest file (rule `fetch`): sources in order, sha256 checked, written atomically.

Computes `thinkbias.data.fetch:fetch_manifest_file`.
"""

from thinkbias.data.fetch import fetch_manifest_file
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as logger:  # noqa: F821 (provided by Snakemake)
    path = fetch_manifest_file(
        snakemake.params.manifest,
        snakemake.params.relpath,  # noqa: F821
        root=snakemake.params.root,
    )  # noqa: F821
    logger.info("ready: %s", path)
