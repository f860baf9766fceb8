"""Write a local AWQ calibration text: one MMLU question (with its options, no answer) per line.

Computes `thinkbias.models.calibration:calibration_lines` of `thinkbias.data.loaders:load_mcq`.
"""

from pathlib import Path

from thinkbias.data.loaders import load_mcq
from thinkbias.data.verify import verify_manifest_files
from thinkbias.models.calibration import calibration_lines
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as log:
    verify_manifest_files(snakemake.params.manifest, [snakemake.input.raw])  # before a byte is read
    items = load_mcq("mmlu", snakemake.input.raw)
    lines = calibration_lines(items, int(snakemake.wildcards.n_lines))
    Path(snakemake.output[0]).write_text("\n".join(lines) + "\n", encoding="utf-8")
    log.info("%d calibration lines from %d MMLU items, %d characters", len(lines), len(items), sum(map(len, lines)))
