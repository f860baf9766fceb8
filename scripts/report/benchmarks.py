"""Collect every model job's metrics file and benchmark file into one table (CSV + Markdown).

Computes `thinkbias.report.benchmarks:benchmark_table`.
"""

from pathlib import Path

from thinkbias.markdown import markdown_table
from thinkbias.report.benchmarks import benchmark_table
from thinkbias.workflow import rule_logging

with rule_logging(snakemake.log[0]) as log:
    p = snakemake.params
    table = benchmark_table(snakemake.input.metrics, p.metrics_root, p.bench_root)
    table.to_csv(snakemake.output.csv, index=False)
    Path(snakemake.output.md).write_text("# Per-job wall time, memory and throughput\n\n" + markdown_table(table, 1))
    log.info("%d benchmarked jobs", len(table))
