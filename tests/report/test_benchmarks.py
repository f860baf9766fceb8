"""The per-job benchmark table joins Snakemake benchmark files with the jobs' token counts."""

from pathlib import Path

from thinkbias.report.benchmarks import benchmark_table

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_table_joins_benchmarks_and_logged_tokens(tmp_path: Path):
    bench, logs = tmp_path / "results/benchmarks", tmp_path / "logs"
    write(bench / "position/generate/mmlu/m/cot/shard-0.tsv", HEADER + "20.0\t0:00:20\t512.5\t1\t1\t1\t0\t0\t90\t19\n")
    write(logs / "position/generate/mmlu/m/cot/shard-0.log",
          "x generate: done 3/3\nx generate: finished, generated_tokens=300 prompt_tokens=90\n")
    write(bench / "fairness/run/probe/adult/m/think/shard-0.tsv", HEADER + "4.0\t0:00:04\tNA\t1\t1\t1\t0\t0\t90\t3\n")
    write(bench / "fairness/run/generate/adult/m/think/shard-0.tsv", HEADER + "2.0\t0:00:02\t9\t1\t1\t1\t0\t0\t90\t2\n")
    write(logs / "fairness/run/generate/adult/m/think/shard-0.log",
          "x generate+probe: finished, generated_tokens=24 cached=0\n"
          "x generate: finished, generated_tokens=4 cached=0\n"
          "x engine stats: EngineStats(generated_tokens=28, prompt_tokens=1600, requests=12)\n")
    table = benchmark_table(bench, logs)
    assert list(table["study"]) == ["fairness", "fairness", "position"]
    assert table.iloc[0]["job"] == "generate/adult/m/think/shard-0" and table.iloc[0]["generated_tokens"] == 28
    cot = table.iloc[2]
    assert cot["job"] == "mmlu/m/cot/shard-0" and cot["step"] == "generate"
    assert cot["generated_tokens"] == 300 and cot["tokens_per_s"] == 15.0 and cot["max_rss_mb"] == 512.5
    probe = table.iloc[1]
    assert probe["generated_tokens"] is None or probe["generated_tokens"] != probe["generated_tokens"]
