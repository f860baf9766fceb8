# The fairness study ("Does Thinking Help Fairness?"): records -> counterfactual prompts -> both arms
# (think / nothink) per model x dataset, sharded, probed as generated (CDPG) -> predictions -> tables, figures, report.
# Every output lives under results/fairness/<run>/ (config fairness.run).
import re

FAIR = config["fairness"]
FAIR_RUN = f"results/fairness/{FAIR['run']}"
FAIR_LOGS = f"logs/fairness/{FAIR['run']}"
FAIR_BENCH = f"results/benchmarks/fairness/{FAIR['run']}"
FAIR_JOBS = f"{JOB_METRICS}/fairness/{FAIR['run']}"
FAIR_TABLES = (
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
FAIR_FIGURES = ("figure2", "figure3", "appendix_c", "figure4")
FAIR_RAW = {
    "adult": ["resources/raw/adult/adult.data", "resources/raw/adult/adult.test"],
    "compas": ["resources/raw/compas/compas-scores-two-years.csv"],
    "credit": ["resources/raw/credit/default_of_credit_card_clients.xls"],
}


def fairness_depths():
    """Every K probed: the sensitivity set plus the main K."""
    return sorted(set(FAIR["sensitivity_depths"]) | {FAIR["depths"]})


def fairness_raw(wildcards):
    """Raw files of a dataset (produced by the manifest's fetch rule)."""
    return FAIR_RAW[wildcards.dataset]


# the model role of fairness generation: the {model} wildcard (sampling set per arm by the library)
FAIR_ROLE = model_role(None)


def fairness_shards():
    return shard_ids(FAIR["n_records"])


def fairness_shard_files(kind):
    """Input helper: every shard of both arms of one setting, for generations or probes."""

    def files(wildcards):
        return expand(
            f"{FAIR_RUN}/{kind}/{wildcards.dataset}/{wildcards.model}/{{arm}}/shard-{{shard}}.parquet",
            arm=["nothink", "think"],
            shard=fairness_shards(),
        )

    return files


def fairness_predictions_file():
    """The predictions table the analysis reads: the user's own (config fairness.predictions) or ours."""
    return FAIR["predictions"] or f"{FAIR_RUN}/predictions.csv"


def fairness_cost_files():
    """Token cost tables (none when the predictions are brought from outside)."""
    return [] if FAIR["predictions"] else [f"{FAIR_RUN}/cost.csv"]


def fairness_table_files():
    return [f"{FAIR_RUN}/tables/{name}.{ext}" for name in FAIR_TABLES for ext in ("csv", "md")]


def fairness_figure_files():
    return [f"{FAIR_RUN}/figures/{name}.png" for name in FAIR_FIGURES]


def fairness_figure_table(wildcards):
    """The table a figure is drawn from (Appendix C draws the curves at every K)."""
    name = "appendix_c_curves" if wildcards.figure == "appendix_c" else wildcards.figure
    return f"{FAIR_RUN}/tables/{name}.csv"


def fairness_job_metrics():
    """Metrics file of every model job of the study (none when the predictions are brought in)."""
    if FAIR["predictions"]:
        return []
    return expand(
        f"{FAIR_JOBS}/generate/{{dataset}}/{{model}}/{{arm}}/shard-{{shard}}.json",
        dataset=FAIR["datasets"],
        model=FAIR["models"],
        arm=["nothink", "think"],
        shard=fairness_shards(),
    )


def fairness_targets():
    """Final products of the fairness study for the active config."""
    return fairness_table_files() + fairness_figure_files() + [f"{FAIR_RUN}/report.md"]


rule fairness_prompts:
    input:
        fairness_raw,
    output:
        f"{FAIR_RUN}/prompts/{{dataset}}.parquet",
    log:
        f"{FAIR_LOGS}/prompts/{{dataset}}.log",
    conda:
        "../envs/data.yaml"
    params:
        n_records=FAIR["n_records"],
        seed=config["seed"],
        manifest=config["manifest"],  # the raw files are verified against it before they are read
    script:
        "../scripts/fairness/prompts.py"


rule fairness_generate:
    # generation and its P(Yes) probes in one job: the think arm's CDPG probes run on the KV state the
    # generation left (no second job, model load or prefill; docs/engine.md)
    input:
        prompts=f"{FAIR_RUN}/prompts/{{dataset}}.parquet",
        weights=FAIR_ROLE.weights,
    output:
        generations=f"{FAIR_RUN}/generations/{{dataset}}/{{model}}/{{arm}}/shard-{{shard}}.parquet",
        probes=f"{FAIR_RUN}/probes/{{dataset}}/{{model}}/{{arm}}/shard-{{shard}}.parquet",
        metrics=f"{FAIR_JOBS}/generate/{{dataset}}/{{model}}/{{arm}}/shard-{{shard}}.json",
    log:
        f"{FAIR_LOGS}/generate/{{dataset}}/{{model}}/{{arm}}/shard-{{shard}}.log",
    benchmark:
        f"{FAIR_BENCH}/generate/{{dataset}}/{{model}}/{{arm}}/shard-{{shard}}.tsv"
    wildcard_constraints:
        arm="think|nothink",
        dataset="adult|compas|credit",
        shard=r"\d+",
    conda:
        FAIR_ROLE.env
    threads: FAIR_ROLE.threads
    resources:
        gpu=FAIR_ROLE.gpus,
    params:
        **FAIR_ROLE.params,
        shard_size=config["shard_size"],
        think_budget=FAIR["think_budget"],
        answer_budget=FAIR["answer_budget"],
        depths=fairness_depths(),
    script:
        "../scripts/fairness/generate.py"


rule fairness_gather:
    input:
        generations=fairness_shard_files("generations"),
        probes=fairness_shard_files("probes"),
    output:
        predictions=f"{FAIR_RUN}/predictions/{{dataset}}/{{model}}.parquet",
        cost=f"{FAIR_RUN}/cost/{{dataset}}/{{model}}.csv",
    log:
        f"{FAIR_LOGS}/gather/{{dataset}}/{{model}}.log",
    conda:
        "../envs/analysis.yaml"
    params:
        main_depth=FAIR["depths"],
    script:
        "../scripts/fairness/gather.py"


rule fairness_predictions:
    input:
        predictions=expand(
            f"{FAIR_RUN}/predictions/{{dataset}}/{{model}}.parquet", dataset=FAIR["datasets"], model=FAIR["models"]
        ),
        cost=expand(f"{FAIR_RUN}/cost/{{dataset}}/{{model}}.csv", dataset=FAIR["datasets"], model=FAIR["models"]),
    output:
        predictions=f"{FAIR_RUN}/predictions.csv",
        cost=f"{FAIR_RUN}/cost.csv",
    log:
        f"{FAIR_LOGS}/predictions.log",
    conda:
        "../envs/analysis.yaml"
    script:
        "../scripts/fairness/combine.py"


rule fairness_cells:
    input:
        fairness_predictions_file(),
    output:
        cells=f"{FAIR_RUN}/cells.parquet",
        parse_csv=f"{FAIR_RUN}/tables/parse_counts.csv",
        parse_md=f"{FAIR_RUN}/tables/parse_counts.md",
        identities_csv=f"{FAIR_RUN}/tables/identities.csv",
        identities_md=f"{FAIR_RUN}/tables/identities.md",
    log:
        f"{FAIR_LOGS}/cells.log",
    conda:
        "../envs/analysis.yaml"
    script:
        "../scripts/fairness/cells.py"


rule fairness_table:
    input:
        f"{FAIR_RUN}/cells.parquet",
    output:
        csv=report(
            f"{FAIR_RUN}/tables/{{product}}.csv",
            caption="../report/captions/fairness/table.rst",
            category="fairness",
            subcategory="tables",
        ),
        md=f"{FAIR_RUN}/tables/{{product}}.md",
    log:
        f"{FAIR_LOGS}/tables/{{product}}.log",
    wildcard_constraints:
        product="table2|figure2|figure3|appendix_c_curves|appendix_c|figure4|table3|table3_gaps|table4|table5",
    conda:
        "../envs/analysis.yaml"
    params:
        n_boot=FAIR["bootstrap_samples"],
        seed=config["seed"],
        main_depth=FAIR["depths"],
        noise_floor=FAIR["noise_floor"],
    script:
        "../scripts/fairness/table.py"


rule fairness_figure:
    input:
        fairness_figure_table,
    output:
        report(
            f"{FAIR_RUN}/figures/{{figure}}.png",
            caption="../report/captions/fairness/figure.rst",
            category="fairness",
            subcategory="figures",
        ),
    log:
        f"{FAIR_LOGS}/figures/{{figure}}.log",
    wildcard_constraints:
        figure="figure2|figure3|appendix_c|figure4",
    conda:
        "../envs/analysis.yaml"
    params:
        main_depth=FAIR["depths"],
    script:
        "../scripts/fairness/figure.py"


rule fairness_report:
    input:
        tables=[f"{FAIR_RUN}/tables/{name}.csv" for name in FAIR_TABLES],
        paper="resources/paper/fairness.yaml",
        cost=fairness_cost_files(),
        engines=fairness_job_metrics(),
    output:
        report(
            f"{FAIR_RUN}/report.md",
            caption="../report/captions/fairness/report.rst",
            category="fairness",
            subcategory="report",
        ),
    log:
        f"{FAIR_LOGS}/report.log",
    conda:
        "../envs/analysis.yaml"
    params:
        run=FAIR["run"],
        benchmarks=FAIR_BENCH,
    script:
        "../scripts/fairness/report.py"


# Named targets: one per table and figure, and the whole study.
rule fairness_table2:
    input:
        f"{FAIR_RUN}/tables/table2.csv",
        f"{FAIR_RUN}/tables/table2.md",


rule fairness_table3:
    input:
        f"{FAIR_RUN}/tables/table3.csv",
        f"{FAIR_RUN}/tables/table3.md",
        f"{FAIR_RUN}/tables/table3_gaps.csv",
        f"{FAIR_RUN}/tables/table3_gaps.md",


rule fairness_table4:
    input:
        f"{FAIR_RUN}/tables/table4.csv",
        f"{FAIR_RUN}/tables/table4.md",


rule fairness_table5:
    input:
        f"{FAIR_RUN}/tables/table5.csv",
        f"{FAIR_RUN}/tables/table5.md",


rule fairness_figure2:
    input:
        f"{FAIR_RUN}/figures/figure2.png",
        f"{FAIR_RUN}/tables/figure2.csv",


rule fairness_figure3:
    input:
        f"{FAIR_RUN}/figures/figure3.png",
        f"{FAIR_RUN}/tables/figure3.csv",


rule fairness_appendix_c:
    input:
        f"{FAIR_RUN}/figures/appendix_c.png",
        f"{FAIR_RUN}/tables/appendix_c.csv",


rule fairness_figure4:
    input:
        f"{FAIR_RUN}/figures/figure4.png",
        f"{FAIR_RUN}/tables/figure4.csv",


rule fairness:
    input:
        fairness_targets(),
