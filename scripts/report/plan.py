"""Write the run plan of the active config (nothing is generated)."""
from pathlib import Path

from thinkbias.report.plan import Throughput, plan_markdown, plan_table, preparation_markdown, preparation_table
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as log:
    cfg, registry, planner = snakemake.params.config, snakemake.params.registry, snakemake.params.planner
    models = {m for m in registry}
    throughput = {
        m: Throughput(planner["tokens_per_s"].get(m, planner["default_tokens_per_s"][registry[m]["backend"]]),
                      planner["prefill_ratio"])
        for m in models
    }
    table = plan_table(cfg, registry, planner["prompt_tokens"], throughput, Path(snakemake.params.cache_dir))
    table.to_csv(snakemake.output.csv, index=False)
    models = preparation_table(cfg, registry, set(snakemake.params.manifest_models), planner["download_mb_per_s"],
                               planner["quantize_hours"])
    models.to_csv(snakemake.output.models_csv, index=False)
    Path(snakemake.output.md).write_text(plan_markdown(table, planner["paper_probe_passes"]) + "\n"
                                         + preparation_markdown(models))
    log.info("planned %d model-preparation jobs", len(models))
    log.info("planned %d requests", int(table["requests"].sum()))
