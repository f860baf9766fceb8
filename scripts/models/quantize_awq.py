"""Quantize a registry model's pinned snapshot to 4-bit AWQ."""
from pathlib import Path

from thinkbias.models.awq import AwqSettings, quantize_awq
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as log:
    settings = AwqSettings(**snakemake.params.settings)
    log.info("AWQ settings: %s", settings)
    record = quantize_awq(Path(snakemake.input.weights[0]).parent, Path(snakemake.output[0]).parent, settings)
    for name, sha in record["files"].items():
        log.info("wrote %s sha256=%s", name, sha)
