# The position study ("More Thinking, More Bias"): position bias in MCQ against reasoning length.
# items -> prompts (4 cyclic permutations, or all 24 orderings) -> generations/{model}/{mode} (sharded) -> records
# (extraction, trajectory, CCP) -> questions (PBS, accuracy, length) -> tables, figures, report;
# truncation continuations around CCP for the configured runs. docs/position.md walks through it.
from thinkbias.position.plan import (
    generation_runs,
    n_prompts,
    shard_count,
    shard_slice,
    truncation_runs,
    truncation_shard_count,
    depth_probe_enabled,
    depth_probe_runs,
)

POSITION = config["position"]
POSITION_BYO = bool(POSITION.get("byo_generations"))
# the cue words of the letter-frequency fallback (thinkbias/position/fallback_cues.py)
POSITION_FALLBACK_CUES = "resources/position/fallback_cues.yaml"
POSITION_TABLES = {
    "table1": "table1_partial_correlation",
    "table2": "table2_summary",
    "table3": "table3_length_bins",
    "table4": "table4_wilcoxon",
    "quartiles": "length_quartiles",
}
POSITION_FIGURES = {
    "figure1": "figure1_length_quartiles",
    "figure2": "figure2_configurations",
    "figure3": "figure3_truncation",
    "figure4": "figure4_regimes",
}
# beyond the paper (Tables 1-4, Figures 1-4): the depth probe
POSITION_DEPTH_TABLE = "results/position/tables/table5_depth_probe"
POSITION_DEPTH_FIGURE = "results/position/figures/figure5_depth_probe.png"


def position_table_path(name, ext="csv"):
    return f"results/position/tables/{POSITION_TABLES[name]}.{ext}"


def position_figure_path(name):
    return f"results/position/figures/{POSITION_FIGURES[name]}.png"


def position_raw(wildcards):
    """Raw file of a benchmark (built by the data fetch rule)."""
    return POSITION["benchmarks"][wildcards.benchmark]["path"]


def position_n_questions(wildcards):
    return int(POSITION["benchmarks"][wildcards.benchmark]["n_questions"])


def position_n_prompts(wildcards):
    return n_prompts(POSITION, wildcards.benchmark, wildcards.model, wildcards.mode)


def position_shard_start(wildcards):
    return shard_slice(int(wildcards.shard), config["shard_size"], position_n_prompts(wildcards))[0]


def position_shard_stop(wildcards):
    return shard_slice(int(wildcards.shard), config["shard_size"], position_n_prompts(wildcards))[1]


def position_shard_files(wildcards):
    """Every generation shard of one configuration, in shard order."""
    n = shard_count(position_n_prompts(wildcards), config["shard_size"])
    return [
        f"results/position/{wildcards.benchmark}/generations/{wildcards.model}/{wildcards.mode}/shard-{i}.parquet"
        for i in range(n)
    ]


# the model role of every position LLM job: the {model} wildcard, threads by rules/common.smk:llm_threads
POSITION_ROLE = model_role(None, threads=llm_threads)
position_weights = POSITION_ROLE.weights
position_llm_threads = POSITION_ROLE.threads


def position_max_tokens(wildcards):
    return int(POSITION["max_tokens"][wildcards.mode])


def position_record_files(wildcards=None):
    """Records of every configuration (or of the bring-your-own table)."""
    if POSITION_BYO:
        return ["results/position/byo/records.parquet"]
    return [
        f"results/position/{r['benchmark']}/records/{r['model']}/{r['mode']}.parquet" for r in generation_runs(POSITION)
    ]


def position_truncation_files(wildcards=None):
    """Continuation shards of every truncation configuration (none for bring-your-own outputs)."""
    if POSITION_BYO:
        return []
    n = truncation_shard_count(POSITION)
    return [
        f"results/position/{r['benchmark']}/truncation/{r['model']}/{r['mode']}/shard-{i}.parquet"
        for r in truncation_runs(POSITION)
        for i in range(n)
    ]


def position_job_metrics(wildcards=None):
    """Metrics file of every generation and truncation job (none for bring-your-own outputs)."""
    if POSITION_BYO:
        return []
    files = []
    for r in generation_runs(POSITION):
        n = shard_count(n_prompts(POSITION, r["benchmark"], r["model"], r["mode"]), config["shard_size"])
        files += [
            f"{JOB_METRICS}/position/generate/{r['benchmark']}/{r['model']}/{r['mode']}/shard-{i}.json"
            for i in range(n)
        ]
    n = truncation_shard_count(POSITION)
    for r in truncation_runs(POSITION):
        files += [
            f"{JOB_METRICS}/position/truncate/{r['benchmark']}/{r['model']}/{r['mode']}/shard-{i}.json"
            for i in range(n)
        ]
    return files  # with the depth probe on, the generation jobs' metrics include its probes


def position_depth_shards():
    """(benchmark, model, mode, shard) of every generation shard of the depth-probed configurations."""
    return [
        (r["benchmark"], r["model"], r["mode"], i)
        for r in depth_probe_runs(POSITION)
        for i in range(shard_count(n_prompts(POSITION, r["benchmark"], r["model"], r["mode"]), config["shard_size"]))
    ]


def position_depth_probe_files(wildcards=None):
    """Depth-probe table of every generation shard of the probed configurations: the generation
    job's own (fused) with the depth probe on, else the position_depth_probe job's."""
    if depth_probe_enabled(POSITION):
        return [
            f"results/position/{b}/generations/{m}/{mode}/shard-{i}.probes.parquet"
            for b, m, mode, i in position_depth_shards()
        ]
    return [
        f"results/position/{b}/depth_probe/{m}/{mode}/shard-{i}.parquet" for b, m, mode, i in position_depth_shards()
    ]


def position_generate_depths(wildcards):
    """Depths the generation job probes in the same pass: the configured ones for a probed
    configuration with the depth probe on, else none."""
    if not depth_probe_enabled(POSITION):
        return []
    probed = {(r["benchmark"], r["model"], r["mode"]) for r in depth_probe_runs(POSITION)}
    return POSITION["depth_probe"]["depths"] if (wildcards.benchmark, wildcards.model, wildcards.mode) in probed else []


def position_table_kind(wildcards):
    """The table key (table1, ..., quartiles) of a table file name."""
    return {v: k for k, v in POSITION_TABLES.items()}[wildcards.position_table]


def position_table_inputs(wildcards=None):
    return {"questions": "results/position/questions.csv", "records": "results/position/records.parquet"}


def position_registry_backends():
    """Backend of every registry model: the report reads a model's kind (api or open-weight) from it
    unless position.model_kinds declares one (thinkbias.position.model_kinds)."""
    return {m: entry.get("backend") for m, entry in REGISTRY.items()}


def position_report_note():
    source = (
        f"bring-your-own generations {POSITION['byo_generations']}"
        if POSITION_BYO
        else (
            "configurations "
            + ", ".join(
                f"{r['benchmark']}/{r['model']}/{r['mode']} ({r['n_questions']} questions)"
                for r in generation_runs(POSITION)
            )
        )
    )
    return (
        f"This run: {source}; PBS norm {POSITION['pbs_norm']}; Table 1 {POSITION['correlation']['method']} "
        f"on {POSITION['correlation']['length_scale']} length; seed {config['seed']}."
    )


rule position_items:
    input:
        raw=position_raw,
    output:
        "results/position/{benchmark}/items.csv",
    log:
        "logs/position/items/{benchmark}.log",
    wildcard_constraints:
        benchmark="mmlu|arc|gpqa",
    conda:
        "../envs/data.yaml"
    params:
        seed=config["seed"],
        n_questions=position_n_questions,
        manifest=config["manifest"],  # the raw file is verified against it before it is read
    script:
        "../scripts/position/items.py"


rule position_prompts:
    input:
        "results/position/{benchmark}/items.csv",
    output:
        "results/position/{benchmark}/prompts.parquet",
    log:
        "logs/position/prompts/{benchmark}.log",
    wildcard_constraints:
        benchmark="mmlu|arc|gpqa",
    conda:
        "../envs/data.yaml"
    params:
        orderings=POSITION["orderings"],
    script:
        "../scripts/position/prompts.py"


rule position_generate:
    input:
        prompts="results/position/{benchmark}/prompts.parquet",
        weights=POSITION_ROLE.weights,
    output:
        "results/position/{benchmark}/generations/{model}/{mode}/shard-{shard}.parquet",
        probes="results/position/{benchmark}/generations/{model}/{mode}/shard-{shard}.probes.parquet",
        metrics=f"{JOB_METRICS}/position/generate/{{benchmark}}/{{model}}/{{mode}}/shard-{{shard}}.json",
    log:
        "logs/position/generate/{benchmark}/{model}/{mode}/shard-{shard}.log",
    benchmark:
        "results/benchmarks/position/generate/{benchmark}/{model}/{mode}/shard-{shard}.tsv"
    wildcard_constraints:
        benchmark="mmlu|arc|gpqa",
        model="[^/]+",
        mode="direct|cot|reasoning",
        shard=r"\d+",
    conda:
        POSITION_ROLE.env
    threads: POSITION_ROLE.threads
    resources:
        gpu=POSITION_ROLE.gpus,
    params:
        **POSITION_ROLE.params,
        max_tokens=position_max_tokens,
        start=position_shard_start,
        stop=position_shard_stop,
        depths=position_generate_depths,
    script:
        "../scripts/position/generate.py"


rule position_gather:
    input:
        position_shard_files,
    output:
        "results/position/{benchmark}/generations/{model}/{mode}.parquet",
    log:
        "logs/position/gather/{benchmark}/{model}/{mode}.log",
    wildcard_constraints:
        benchmark="mmlu|arc|gpqa",
        model="[^/]+",
        mode="direct|cot|reasoning",
    conda:
        "../envs/analysis.yaml"
    script:
        "../scripts/position/gather.py"


rule position_extract:
    input:
        generations="results/position/{benchmark}/generations/{model}/{mode}.parquet",
        prompts="results/position/{benchmark}/prompts.parquet",
        cues=POSITION_FALLBACK_CUES,
    output:
        "results/position/{benchmark}/records/{model}/{mode}.parquet",
    log:
        "logs/position/extract/{benchmark}/{model}/{mode}.log",
    wildcard_constraints:
        benchmark="mmlu|arc|gpqa",
        model="[^/]+",
        mode="direct|cot|reasoning",
    conda:
        "../envs/analysis.yaml"
    params:
        fallback=POSITION["extraction_fallback"],
        ccp_definition=POSITION["ccp_definition"],
    script:
        "../scripts/position/extract.py"


rule position_byo:
    input:
        POSITION["byo_generations"] or "byo-generations-not-configured",
        cues=POSITION_FALLBACK_CUES,
    output:
        "results/position/byo/records.parquet",
    log:
        "logs/position/byo/records.log",
    conda:
        "../envs/analysis.yaml"
    params:
        orderings=POSITION["orderings"],
        fallback=POSITION["extraction_fallback"],
        ccp_definition=POSITION["ccp_definition"],
    script:
        "../scripts/position/byo.py"


rule position_metrics:
    input:
        position_record_files,
    output:
        records="results/position/records.parquet",
        questions="results/position/questions.csv",
    log:
        "logs/position/metrics/metrics.log",
    conda:
        "../envs/analysis.yaml"
    params:
        pbs_norm=POSITION["pbs_norm"],
    script:
        "../scripts/position/metrics.py"


rule position_truncate:
    input:
        records="results/position/{benchmark}/records/{model}/{mode}.parquet",
        prompts="results/position/{benchmark}/prompts.parquet",
        weights=POSITION_ROLE.weights,
    output:
        "results/position/{benchmark}/truncation/{model}/{mode}/shard-{shard}.parquet",
        metrics=f"{JOB_METRICS}/position/truncate/{{benchmark}}/{{model}}/{{mode}}/shard-{{shard}}.json",
    log:
        "logs/position/truncate/{benchmark}/{model}/{mode}/shard-{shard}.log",
    benchmark:
        "results/benchmarks/position/truncate/{benchmark}/{model}/{mode}/shard-{shard}.tsv"
    wildcard_constraints:
        benchmark="mmlu|arc|gpqa",
        model="[^/]+",
        mode="direct|cot|reasoning",
        shard=r"\d+",
    conda:
        POSITION_ROLE.env
    threads: POSITION_ROLE.threads
    resources:
        gpu=POSITION_ROLE.gpus,
    params:
        **POSITION_ROLE.params,
        truncation=POSITION["truncation"],
    script:
        "../scripts/position/truncate.py"


rule position_truncation_tables:
    input:
        position_truncation_files,
    output:
        continuations="results/position/truncation_continuations.csv",
        buckets=report(
            "results/position/tables/truncation_buckets.csv",
            caption="../report/captions/position/truncation_buckets.rst",
            category="position",
            subcategory="tables",
        ),
        test=report(
            "results/position/tables/truncation_before_after.csv",
            caption="../report/captions/position/truncation_before_after.rst",
            category="position",
            subcategory="tables",
        ),
        markdown="results/position/tables/truncation.md",
    log:
        "logs/position/truncation_tables/truncation.log",
    conda:
        "../envs/analysis.yaml"
    params:
        buckets=POSITION["truncation"]["buckets"],
    script:
        "../scripts/position/truncation_tables.py"


rule position_table:
    input:
        unpack(position_table_inputs),
    output:
        csv=report(
            "results/position/tables/{position_table}.csv",
            caption="../report/captions/position/table.rst",
            category="position",
            subcategory="tables",
        ),
        markdown="results/position/tables/{position_table}.md",
    log:
        "logs/position/table/{position_table}.log",
    wildcard_constraints:
        position_table="|".join(POSITION_TABLES.values()),
    conda:
        "../envs/analysis.yaml"
    params:
        which=position_table_kind,
        correlation=POSITION["correlation"],
        bins=POSITION["bins"],
        pairs=POSITION["wilcoxon_pairs"],
    script:
        "../scripts/position/table.py"


rule position_figure1:
    input:
        quartiles=position_table_path("quartiles"),
    output:
        report(
            position_figure_path("figure1"),
            caption="../report/captions/position/figure1.rst",
            category="position",
            subcategory="figures",
        ),
    log:
        "logs/position/figure/figure1.log",
    conda:
        "../envs/analysis.yaml"
    params:
        which="figure1",
    script:
        "../scripts/position/figure.py"


rule position_figure2:
    input:
        quartiles=position_table_path("quartiles"),
        table1=position_table_path("table1"),
    output:
        report(
            position_figure_path("figure2"),
            caption="../report/captions/position/figure2.rst",
            category="position",
            subcategory="figures",
        ),
    log:
        "logs/position/figure/figure2.log",
    conda:
        "../envs/analysis.yaml"
    params:
        which="figure2",
    script:
        "../scripts/position/figure.py"


rule position_figure3:
    input:
        buckets="results/position/tables/truncation_buckets.csv",
    output:
        report(
            position_figure_path("figure3"),
            caption="../report/captions/position/figure3.rst",
            category="position",
            subcategory="figures",
        ),
    log:
        "logs/position/figure/figure3.log",
    conda:
        "../envs/analysis.yaml"
    params:
        which="figure3",
    script:
        "../scripts/position/figure.py"


rule position_figure4:
    input:
        summary=position_table_path("table2"),
    output:
        report(
            position_figure_path("figure4"),
            caption="../report/captions/position/figure4.rst",
            category="position",
            subcategory="figures",
        ),
    log:
        "logs/position/figure/figure4.log",
    conda:
        "../envs/analysis.yaml"
    params:
        which="figure4",
    script:
        "../scripts/position/figure.py"


rule position_report:
    input:
        paper="resources/paper/position.yaml",
        table1=position_table_path("table1"),
        table2=position_table_path("table2"),
        table3=position_table_path("table3"),
        table4=position_table_path("table4"),
        quartiles=position_table_path("quartiles"),
        truncation_buckets="results/position/tables/truncation_buckets.csv",
        truncation_test="results/position/tables/truncation_before_after.csv",
        engines=position_job_metrics(),
    output:
        report(
            "results/position/report.md",
            caption="../report/captions/position/report.rst",
            category="position",
            subcategory="report",
        ),
    log:
        "logs/position/report/report.log",
    conda:
        "../envs/analysis.yaml"
    params:
        note=position_report_note(),
        model_kinds=POSITION["model_kinds"],
        registry_backends=position_registry_backends(),
    script:
        "../scripts/position/report.py"


# Named targets: one per table, and the whole study (the figure rules position_figure1..4 are their own targets).
rule position_table1:
    input:
        position_table_path("table1"),
        position_table_path("table1", "md"),


rule position_table2:
    input:
        position_table_path("table2"),
        position_table_path("table2", "md"),


rule position_table3:
    input:
        position_table_path("table3"),
        position_table_path("table3", "md"),


rule position_table4:
    input:
        position_table_path("table4"),
        position_table_path("table4", "md"),


# Depth probe (beyond the paper): P(A..D) after a forced answer cue at fractions of each trace; Table 5 and
# Figure 5. With depth_probe.enabled the generation jobs probe in the same pass (shard-{i}.probes.parquet);
# otherwise position_table5 / position_figure5 probe the cached generations in this job of its own.
rule position_depth_probe:
    input:
        generations="results/position/{benchmark}/generations/{model}/{mode}/shard-{shard}.parquet",
        prompts="results/position/{benchmark}/prompts.parquet",
        weights=position_weights,
    output:
        probes="results/position/{benchmark}/depth_probe/{model}/{mode}/shard-{shard}.parquet",
        metrics=f"{JOB_METRICS}/position/depth_probe/{{benchmark}}/{{model}}/{{mode}}/shard-{{shard}}.json",
    log:
        "logs/position/depth_probe/{benchmark}/{model}/{mode}/shard-{shard}.log",
    benchmark:
        "results/benchmarks/position/depth_probe/{benchmark}/{model}/{mode}/shard-{shard}.tsv"
    wildcard_constraints:
        benchmark="mmlu|arc|gpqa",
        model="[^/]+",
        mode="cot|reasoning",
        shard=r"\d+",
    conda:
        llm_env
    threads: position_llm_threads
    resources:
        gpu=gpus_for_wildcards,
    params:
        model="{model}",
        registry=config["registry"],
        model_identity=model_identity_wildcards,
        cache_dir=CACHE_DIR,
        max_tokens=position_max_tokens,
        start=position_shard_start,
        stop=position_shard_stop,
        depths=POSITION["depth_probe"]["depths"],
    script:
        "../scripts/position/depth_probe.py"


rule position_depth_table:
    input:
        probes=position_depth_probe_files,
        questions="results/position/questions.csv",
    output:
        csv=report(
            f"{POSITION_DEPTH_TABLE}.csv",
            caption="../report/captions/position/table5.rst",
            category="position",
            subcategory="tables",
        ),
        markdown=f"{POSITION_DEPTH_TABLE}.md",
    log:
        "logs/position/table/table5_depth_probe.log",
    conda:
        "../envs/analysis.yaml"
    script:
        "../scripts/position/depth_table.py"


rule position_figure5:
    input:
        table5=f"{POSITION_DEPTH_TABLE}.csv",
    output:
        report(
            POSITION_DEPTH_FIGURE,
            caption="../report/captions/position/figure5.rst",
            category="position",
            subcategory="figures",
        ),
    log:
        "logs/position/figure/figure5.log",
    conda:
        "../envs/analysis.yaml"
    script:
        "../scripts/position/depth_figure.py"


rule position_table5:
    input:
        f"{POSITION_DEPTH_TABLE}.csv",
        f"{POSITION_DEPTH_TABLE}.md",


def position_depth_targets():
    """The depth probe's table and figure when the study's target includes them (depth_probe.enabled
    and a probed mode); the named targets position_table5 and position_figure5 build them regardless."""
    if not depth_probe_enabled(POSITION):
        return []
    return [f"{POSITION_DEPTH_TABLE}.csv", f"{POSITION_DEPTH_TABLE}.md", POSITION_DEPTH_FIGURE]


def position_targets():
    """Final products of the position study for the active config."""
    tables = [position_table_path(k, ext) for k in POSITION_TABLES for ext in ("csv", "md")]
    figures = [position_figure_path(k) for k in POSITION_FIGURES]
    return (
        tables
        + figures
        + ["results/position/tables/truncation.md", "results/position/report.md"]
        + position_depth_targets()
    )


rule position:
    input:
        position_targets(),
