"""Download one registry model's pinned snapshot into resources/models/<id>/.

Computes `thinkbias.models.hub:download_snapshot`.
"""

from pathlib import Path

from thinkbias.models.hub import download_snapshot
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as log:
    entry = snakemake.params.entry
    verified = download_snapshot(
        entry["source"]["repo"],
        entry["source"]["revision"],
        entry["files"],
        Path(snakemake.output[0]).parent,
        gated=bool(entry.get("gated")),
    )
    for name, sha in verified.items():
        log.info("verified %s sha256=%s", name, sha)
