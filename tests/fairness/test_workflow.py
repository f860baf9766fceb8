"""One real end-to-end run of the fairness study on the embedded model (tiny sizes)."""

import pandas as pd
import pytest

from tests.helpers import job_table, run_snakemake, tiny_config
from thinkbias.llm.metrics import read_job_metrics

pytestmark = pytest.mark.slow

TABLES = (
    "parse_counts",
    "identities",
    "table2",
    "figure2",
    "figure3",
    "appendix_c_curves",
    "appendix_c",
    "figure4",
    "table3",
    "table3_gaps",
    "table4",
    "table5",
)


def test_embedded_end_to_end(workflow_dir, embedded_model):
    cfg = tiny_config(
        fairness={
            "run": "e2e",
            "datasets": ["adult"],
            "n_records": 2,
            "think_budget": 12,
            "answer_budget": 6,
            "bootstrap_samples": 100,
        }
    )
    run_snakemake(workflow_dir, ["--cores", "2", "fairness"], config=cfg)
    out = workflow_dir / "results/fairness/e2e"
    for name in TABLES:
        assert (out / f"tables/{name}.csv").exists() and (out / f"tables/{name}.md").stat().st_size > 0
    for fig in ("figure2", "figure3", "appendix_c", "figure4"):
        assert (out / f"figures/{fig}.png").stat().st_size > 1000
    pred = pd.read_csv(out / "predictions.csv")
    assert len(pred) == 2 * 2 * 2 and set(pred.arm) == {"think", "nothink"}
    parse = pd.read_csv(out / "tables/parse_counts.csv").iloc[0]
    assert parse.pairs == 2
    assert parse.nothink_ok + parse.nothink_refusal + parse.nothink_unparsed == 4
    t2 = pd.read_csv(out / "tables/table2.csv")
    row = t2[t2.model == "smollm2-135m"].iloc[0]
    assert row.a + row.b + row.c + row.d == row.N == parse.N
    f2 = pd.read_csv(out / "tables/figure2.csv")
    assert (f2.N == parse.N).all()
    if parse.N:
        # every retained think side was probed at every depth of K = 10
        f3 = pd.read_csv(out / "tables/figure3.csv")
        assert f3.groupby("k").n.sum().eq(parse.N).all() and f3.k.max() == 10
    cost = pd.read_csv(out / "cost.csv").iloc[0]
    assert cost.requests == 8 and cost.generated_tokens > 0
    # each generation job's metrics file counts what its shard's generations and probes hold
    gen_dir, metrics_dir = out / "generations", workflow_dir / "results/job_metrics/fairness/e2e/generate"
    shards = sorted(gen_dir.rglob("shard-*.parquet"))
    assert len(shards) == 2
    for shard in shards:
        rel = shard.relative_to(gen_dir)
        gens, probes = pd.read_parquet(shard), pd.read_parquet(out / "probes" / rel)
        m = read_job_metrics(metrics_dir / rel.with_suffix(".json"))
        assert m.generated_tokens == gens["completion_tokens"].sum() > 0, rel
        assert m.requests == len(gens) + gens["forced_close"].sum() and m.cached == 0, rel
        assert m.batches == 1 + gens["forced_close"].any(), rel
        assert m.prompt_tokens >= gens["prompt_tokens"].sum() > 0, rel  # force-close prompts come on top
        assert m.probe_tokens == probes["probe_tokens_evaluated"].sum() > 0, rel
        assert (m.retries, m.retry_wait_s) == (0, 0.0) and m.wall_s > 0, rel
    # the benchmark table reads those files
    jobs = job_table(workflow_dir)
    gen_jobs = jobs[(jobs["study"] == "fairness") & jobs["job"].str.startswith("generate/")]
    assert {j.split("/")[3] for j in gen_jobs["job"]} == {"think", "nothink"}
    assert gen_jobs["generated_tokens"].sum() == cost.generated_tokens
    report = (out / "report.md").read_text()
    assert "different model" in report and "Probing cost" in report
