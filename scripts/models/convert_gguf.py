"""Convert a registry model's GGUF into a Hugging Face snapshot vLLM loads.

Computes `thinkbias.models.gguf_convert:convert_gguf_to_hf` (after `thinkbias.llm.weights:verified_spec`).
"""

from pathlib import Path

from thinkbias.llm import load_model_spec
from thinkbias.llm.weights import verified_spec
from thinkbias.models.gguf_convert import convert_gguf_to_hf
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as log:
    # the GGUF against its registry sha256, before transformers reads it
    source = verified_spec(
        load_model_spec(snakemake.params.registry, snakemake.params.source, weights=snakemake.input.weights[0])
    )
    record = convert_gguf_to_hf(Path(source.weights), Path(snakemake.output[0]).parent, snakemake.params.dtype)
    for name, sha in record["files"].items():
        log.info("wrote %s sha256=%s", name, sha)
