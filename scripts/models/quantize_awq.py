"""Quantize a registry model's pinned snapshot to 4-bit AWQ.

Computes `thinkbias.models.awq:quantize_awq` (after `thinkbias.llm.weights:verified_spec`).
"""

from pathlib import Path

from thinkbias.llm.types import ModelSpec
from thinkbias.llm.weights import verified_spec
from thinkbias.models.awq import AwqSettings, quantize_awq
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as log:
    settings = AwqSettings(**snakemake.params.settings)
    source = Path(snakemake.input.weights[0]).parent
    # the source snapshot against its download record, before AutoAWQ loads it
    verified_spec(
        ModelSpec(
            id=source.name,
            backend="vllm",
            weights=str(source),
            files=tuple((Path(p).name, "") for p in snakemake.input.weights),
        )
    )
    log.info("AWQ settings: %s", settings)
    record = quantize_awq(source, Path(snakemake.output[0]).parent, settings)
    for name, sha in record["files"].items():
        log.info("wrote %s sha256=%s", name, sha)
