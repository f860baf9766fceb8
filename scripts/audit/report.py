"""The audit report of one model: headline numbers of the three studies read from their tables.

Computes `thinkbias.audit.report:build_audit` (the settings from `thinkbias.audit.config:settings_rows`).
"""

from pathlib import Path

import pandas as pd

from thinkbias.audit.report import build_audit
from thinkbias.workflow import rule_logging
from thinkbias.yamlfile import read_yaml

with rule_logging(snakemake.log[0]) as logger:
    tables, papers = {}, {}
    for name, path in snakemake.input.items():
        study, _, kind = name.partition("_")
        if kind == "paper":
            papers[study] = read_yaml(path)
        else:
            tables[name] = pd.read_csv(path, dtype={"question_id": str, "other_flagged": str})
    text, rendered = build_audit(
        snakemake.params.model, snakemake.params.settings, tables, papers, snakemake.params.position_modes
    )
    for path in snakemake.output.tables:
        rendered[Path(path).stem].to_csv(path, index=False)
    Path(snakemake.output.report).write_text(text)
    logger.info(f"audit report written ({len(text)} characters, studies: {', '.join(sorted(papers))})")
