# Run-level products: the run plan and the per-job benchmark table.


def study_products(wildcards=None):
    """Final products of every enabled study (the benchmark table is made after all of them)."""
    return [t for t in all_targets() if t != "results/benchmarks.csv"]


rule plan:
    output:
        md="results/plan.md",
        csv="results/plan.csv",
        models_csv="results/plan_models.csv",
    log:
        "logs/report/plan.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        config={**{s: config[s] for s in STUDIES}, "shard_size": config["shard_size"]},
        registry=REGISTRY,
        manifest_models=sorted(manifest_models()),
        planner=config["planner"],
        cache_dir=CACHE_DIR,
    script:
        "../scripts/report/plan.py"


def job_metrics_files(wildcards=None):
    """Metrics file of every model job of the enabled studies."""
    return [f for study in STUDIES if study_enabled(study) for f in globals()[f"{study}_job_metrics"]()]


rule benchmarks_table:
    input:
        products=study_products,
        metrics=job_metrics_files,
    output:
        csv=report(
            "results/benchmarks.csv",
            caption="../report/benchmarks.rst",
            category="Run",
            labels={"table": "per-job wall time, memory, tokens/s"},
        ),
        md="results/benchmarks.md",
    log:
        "logs/report/benchmarks.log",
    localrule: True
    conda:
        "../envs/analysis.yaml"
    params:
        bench_root="results/benchmarks",
        metrics_root=JOB_METRICS,
    script:
        "../scripts/report/benchmarks.py"
