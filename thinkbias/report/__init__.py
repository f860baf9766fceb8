"""Run-level products: per-job benchmark table, run plan, caption files of the Snakemake report."""
