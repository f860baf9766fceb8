"""Write the run plan of the active config (nothing is generated).

Computes `thinkbias.report.plan:plan_table`, `thinkbias.report.plan:plan_markdown`,
`thinkbias.report.plan:preparation_table` and `thinkbias.report.plan:preparation_markdown`.
"""

from pathlib import Path

from thinkbias.report.plan import plan_markdown, plan_settings, plan_table, preparation_markdown, preparation_table
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as log:
    cfg, registry, planner = snakemake.params.config, snakemake.params.registry, snakemake.params.planner
    settings = plan_settings(planner, registry, set(registry))
    table = plan_table(cfg, registry, settings, Path(snakemake.params.cache_dir))
    table.to_csv(snakemake.output.csv, index=False, float_format="%.4f")
    models = preparation_table(
        cfg, registry, set(snakemake.params.manifest_models), planner["download_mb_per_s"], planner["quantize_hours"]
    )
    models.to_csv(snakemake.output.models_csv, index=False)
    Path(snakemake.output.md).write_text(
        plan_markdown(table, registry, settings, planner["paper_probe_passes"]) + "\n" + preparation_markdown(models)
    )
    log.info("planned %d model-preparation jobs", len(models))
    log.info("planned %d requests (%d expected)", int(table["requests"].sum()), int(table["expected_requests"].sum()))
