"""The per-job benchmark table joins the model jobs' metrics files with their Snakemake benchmark files."""

import re
from pathlib import Path

import pandas as pd
import pytest

from tests.helpers import dry_run_jobs, make_workflow_dir, run_snakemake, tiny_config
from thinkbias.llm.metrics import JobMetrics, write_job_metrics
from thinkbias.report.benchmarks import benchmark_table

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_table_joins_metrics_files_and_benchmarks(tmp_path: Path):
    bench, jobs = tmp_path / "results/benchmarks", tmp_path / "results/job_metrics"
    files = [
        jobs / "position/generate/mmlu/m/cot/shard-0.json",
        jobs / "fairness/run/generate/adult/m/think/shard-0.json",
        jobs / "blindspot/embed/loan.json",
    ]
    write(bench / "position/generate/mmlu/m/cot/shard-0.tsv", HEADER + "20.0\t0:00:20\t512.5\t1\t1\t1\t0\t0\t90\t19\n")
    write_job_metrics(files[0], JobMetrics(batches=1, requests=3, generated_tokens=300, prompt_tokens=90, wall_s=19))
    write(
        bench / "fairness/run/generate/adult/m/think/shard-0.tsv", HEADER + "2.0\t0:00:02\tNA\t1\t1\t1\t0\t0\t90\t2\n"
    )
    write_job_metrics(files[1], JobMetrics(batches=2, requests=4, generated_tokens=28, wall_s=1.5))
    write_job_metrics(files[2], JobMetrics(wall_s=3.0))  # closed no batch, no benchmark file
    # a benchmark file no metrics file names (an earlier run's, another config's) is not a row
    write(bench / "fairness/old/generate/adult/m/think/shard-0.tsv", HEADER + "9.0\t0:00:09\t9\t1\t1\t1\t0\t0\t90\t9\n")
    table = benchmark_table([str(f) for f in files], jobs, bench)
    assert list(table["study"]) == ["blindspot", "fairness", "position"]
    embed, think, cot = (table.iloc[i] for i in range(3))
    assert embed["step"] == "embed" and embed["job"] == "loan" and embed["wall_s"] == 3.0
    assert pd.isna(embed["generated_tokens"]) and pd.isna(embed["max_rss_mb"]) and pd.isna(embed["tokens_per_s"])
    assert think["job"] == "generate/adult/m/think/shard-0" and think["generated_tokens"] == 28
    assert think["wall_s"] == 2.0 and think["tokens_per_s"] == 14.0 and pd.isna(think["max_rss_mb"])
    assert cot["job"] == "mmlu/m/cot/shard-0" and cot["step"] == "generate"
    assert cot["generated_tokens"] == 300 and cot["tokens_per_s"] == 15.0 and cot["max_rss_mb"] == 512.5


def test_a_metrics_file_outside_the_root_stops(tmp_path: Path):
    other = tmp_path / "elsewhere/job.json"
    write_job_metrics(other, JobMetrics())
    with pytest.raises(ValueError, match="1 job metrics file\\(s\\) outside"):
        benchmark_table([other], tmp_path / "results/job_metrics", tmp_path / "results/benchmarks")


def test_every_rule_that_runs_a_model_declares_a_metrics_file():
    from tests.workflow.test_structure import rule_blocks

    # a rule runs a model when it carries the model's identity: directly, or in a model role's params
    runs_model = re.compile(r"model_identity=|^\s+\*\*\w+(\[\"\w+\"\])?\.params,", flags=re.M)
    model_rules = {name: body for name, body in rule_blocks().items() if runs_model.search(body)}
    assert len(model_rules) >= 13, sorted(model_rules)
    missing = [
        name
        for name, body in model_rules.items()
        if not re.search(r"^\s+output:\n(\s{8}.*\n)*?\s{8}metrics=.*JOB", body + "\n", flags=re.M)
        or "benchmark:" not in body
    ]
    assert not missing, f"model rules without a metrics output or a benchmark file: {missing}"


def test_benchmark_rule_takes_every_model_jobs_metrics_file(tmp_path: Path):
    """Dry run of the default fairness and position studies: every benchmarked job declares the
    metrics file at its benchmark file's path, and the benchmark table's inputs are exactly those.
    (Blindspot's stage jobs follow a checkpoint, so its inputs are known only as the run goes; its
    end-to-end tests read the table of every job.)"""
    wd = make_workflow_dir(tmp_path / "wf")
    proc = run_snakemake(wd, ["-n", "--cores", "1"], config=tiny_config(fairness={}, position={}))
    jobs = dry_run_jobs(proc.stdout + "\n" + proc.stderr)
    benchmarked = [j for j in jobs if j["benchmark"]]
    assert {j["rule"] for j in benchmarked} == {"fairness_generate", "position_generate", "position_truncate"}
    declared = set()
    for job in benchmarked:
        (bench,) = job["benchmark"]
        mirrored = "results/job_metrics/" + bench.removeprefix("results/benchmarks/").removesuffix(".tsv") + ".json"
        assert mirrored in job["output"], (job["rule"], job["wildcards"], job["output"])
        declared.add(mirrored)
    (table,) = [j for j in jobs if j["rule"] == "benchmarks_table"]
    assert {f for f in table["input"] if f.startswith("results/job_metrics/")} == declared
    assert len(declared) == len(benchmarked) > 4
