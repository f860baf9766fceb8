"""The Markdown report: this run's tables beside the paper's reported values.

Computes `thinkbias.position.model_kinds:model_kinds` (each model of the tables: api or open-weight,
from `position.model_kinds` or the registry), then `thinkbias.position.report:report_markdown` and
`thinkbias.llm.metrics:engine_build_section`.
"""

from pathlib import Path

import pandas as pd

from thinkbias.llm.metrics import engine_build_section
from thinkbias.position.model_kinds import model_kinds
from thinkbias.position.report import report_markdown
from thinkbias.workflow import rule_logging
from thinkbias.yamlfile import read_yaml

with rule_logging(snakemake.log[0]) as logger:
    tables = {}
    for name, path in snakemake.input.items():
        if name in ("paper", "engines"):
            continue
        tables[name] = pd.read_csv(path, dtype={"question_id": str, "model": str})
    models = {m for t in tables.values() if "model" in t.columns for m in t["model"].dropna()}
    kinds = model_kinds(models, snakemake.params.model_kinds, snakemake.params.registry_backends)
    logger.info("model kinds: " + "; ".join(f"{r.model} {r.kind} ({r.source})" for r in kinds.itertuples()))
    paper = read_yaml(snakemake.input.paper)
    text = report_markdown(paper, tables, snakemake.params.note, kinds)
    text += "\n" + engine_build_section(snakemake.input.engines)
    Path(snakemake.output[0]).write_text(text)
    logger.info(f"report written ({len(text)} characters)")
