"""Run-level products: per-job benchmark table, run plan."""
