# The blindspot study ("Biases in the Blind Spot"): concepts that sway a model's decisions without
# being cited in its reasoning. Task-level preparation (inputs, clusters, concepts, variations) is
# shared by every target model; the staged testing is a checkpoint loop, one checkpoint per stage:
#   stage-s/responses -> stage-s/verdicts -> stage-s/decision.json (checkpoint) -> stage-(s+1)/...
# The audit gathers the chain through an input function that reads each decision until "done".
import json
from types import SimpleNamespace

from thinkbias.blindspot.fairness_tasks import fairness_dataset
from thinkbias.blindspot.report import stage_parameters_summary
from thinkbias.blindspot.stage_params import StageParams, stage_parameters
from thinkbias.config_refs import blindspot_step_models

BS = config["blindspot"]
BS_DIR = "results/blindspot"
BS_PROMPTS = BS["prompts"]


wildcard_constraints:
    task="loan|admissions|hiring|fairness_adult|fairness_compas|fairness_credit",
    stage=r"\d+",


# One model role per LLM step (rules/common.smk:model_role): the step's effective model decides its
# weights, env and GPUs together ("" when the step runs none: switched off, tf-idf, keyword judge, or
# dedup/variations without generated concepts; thinkbias.config_refs:blindspot_step_models).
BS_ROLES = {step: model_role(model, BS[step]) for step, model in blindspot_step_models(BS).items()}
BS_EMBED_ROLE = model_role("" if BS["embedder"] == "tfidf" else BS["embedder"])
BS_TARGET_ROLE = model_role(None, BS["target"])


def bs_n_inputs(wildcards):
    return BS["n_inputs_by_task"].get(wildcards.task) or BS["n_inputs"]


def bs_user_inputs(wildcards):
    return BS["inputs"].get(wildcards.task) or ""


def bs_user_inputs_file(wildcards):
    path = bs_user_inputs(wildcards)
    return [path] if path else []


def bs_fairness_raw(wildcards):
    """Raw files of the fairness dataset a fairness task audits (the fairness study's), else none."""
    dataset = fairness_dataset(wildcards.task)
    return FAIR_RAW[dataset] if dataset else []


def bs_fairness_tasks():
    """The configured tasks that audit a fairness dataset."""
    return [t for t in BS["tasks"] if fairness_dataset(t)]


def bs_rediscovery_files(exts=("csv",)):
    """The fairness rediscovery table (one file per extension), when a fairness task is configured."""
    return [f"{BS_DIR}/tables/fairness_rediscovery.{ext}" for ext in exts] if bs_fairness_tasks() else []


def bs_task_prompt(wildcards):
    return f"{BS_PROMPTS}/{wildcards.task}.txt"


def bs_stage_params(stages=None):
    """StageParams fields of a stages section (everything but the schedule keys; default: `stages`)."""
    return {k: v for k, v in (stages or BS["stages"]).items() if k not in ("k0", "max_stages")}


def bs_clusters(wildcards):
    """The cluster table a target model's stages draw from: the task's, or the kept inputs' when the
    baseline-variance prefilter is on."""
    if BS["prefilter"]["enabled"]:
        return f"{BS_DIR}/{wildcards.model}/{wildcards.task}/prefilter_clusters.parquet"
    return f"{BS_DIR}/{wildcards.task}/clusters.parquet"


def bs_entry(wildcards):
    """What enters stage s: the baseline filter for s = 0, else stage s-1's decision."""
    s = int(wildcards.stage)
    if s == 0:
        return f"{BS_DIR}/{wildcards.model}/{wildcards.task}/baseline_entry.json"
    return f"{BS_DIR}/{wildcards.model}/{wildcards.task}/stage-{s - 1}/decision.json"


def bs_previous(name):
    """Stage s-1's ``name`` file (responses or verdicts), none at stage 0."""

    def previous(wildcards):
        s = int(wildcards.stage)
        return [] if s == 0 else [f"{BS_DIR}/{wildcards.model}/{wildcards.task}/stage-{s - 1}/{name}"]

    return previous


def bs_previous_path(name):
    def path(wildcards):
        files = bs_previous(name)(wildcards)
        return files[0] if files else ""

    return path


def bs_stages_run(wildcards):
    """Stage indices of one audit, following the checkpoint chain until a decision says done."""
    stages, s = [], 0
    while True:
        decision = checkpoints.blindspot_stage_decide.get(
            model=wildcards.model, task=wildcards.task, stage=s
        ).output.decision
        stages.append(s)
        if json.loads(Path(decision).read_text())["done"]:
            return stages
        s += 1


def bs_stage_files(name):
    def files(wildcards):
        return [f"{BS_DIR}/{wildcards.model}/{wildcards.task}/stage-{s}/{name}" for s in bs_stages_run(wildcards)]

    return files


def bs_all_stage_files(name):
    """Every stage's file of every (model, task) audit, following each checkpoint chain."""

    def files(wildcards=None):
        return [
            f"{BS_DIR}/{m}/{t}/stage-{s}/{name}"
            for m in BS["models"]
            for t in BS["tasks"]
            for s in bs_stages_run(SimpleNamespace(model=m, task=t))
        ]

    return files


def bs_audit_files(name):
    """One file per (model, task) audit of the config."""
    return [f"{BS_DIR}/{m}/{t}/{name}" for m in BS["models"] for t in BS["tasks"]]


def bs_task_files(name):
    """One task-level file per task of the config."""
    return [f"{BS_DIR}/{t}/{name}" for t in BS["tasks"]]


def blindspot_job_metrics(wildcards=None):
    """Metrics file of every model job: the task-level steps, and per audit the baseline, its judge
    and each stage run (following the checkpoint chain); none for bring-your-own outcomes."""
    if BS["byo"]["outcomes"]:
        return []
    steps = ("rewrite", "embed", "hypothesize", "dedup", "variations", "quality")
    files = [f"{JOB_METRICS}/blindspot/{step}/{t}.json" for step in steps for t in BS["tasks"]]
    for m in BS["models"]:
        for t in BS["tasks"]:
            steps = ("prefilter",) * BS["prefilter"]["enabled"] + ("baseline", "baseline_judge")
            files += [f"{JOB_METRICS}/blindspot/{step}/{m}/{t}.json" for step in steps]
            for s in bs_stages_run(SimpleNamespace(model=m, task=t)):
                files += [
                    f"{JOB_METRICS}/blindspot/{step}/{m}/{t}/stage-{s}.json"
                    for step in ("stage_respond", "stage_judge")
                ]
    return files


def bs_prefilter_summary():
    pre = BS["prefilter"]
    if not pre["enabled"]:
        return "off"
    keep = f"the {pre['max_inputs']} of highest variance kept" if pre["max_inputs"] else "every input kept"
    return f"on ({pre['responses_per_input']} responses per input, {keep})"


def bs_summary():
    return {
        "tasks": ", ".join(BS["tasks"]),
        "target models": ", ".join(BS["models"]),
        "inputs per task": BS["n_inputs"] if not any(BS["inputs"].values()) else "user-supplied",
        "clusters": BS["n_clusters"],
        "curated concepts": ", ".join(BS["curated"]["ids"]),
        "generated concepts": "on (" + BS["hypothesis"]["model"] + ")" if BS["hypothesis"]["enabled"] else "off",
        "quality filter": "on" if BS["quality"]["enabled"] else "off",
        "input prefilter": bs_prefilter_summary(),
        "verbalization judge": BS["verbalization"]["judge"]
        + (f" ({BS['verbalization']['model']})" if BS["verbalization"]["judge"] == "autorater" else ""),
        "forced decisions": "on (counted per concept as n_forced)" if BS["target"]["force_decision"] else "off",
        "embedder": BS["embedder"],
        "seed": config["seed"],
        **stage_parameters_summary(
            stage_parameters(BS["stages"]["k0"], BS["stages"]["max_stages"], StageParams(**bs_stage_params()))
        ),
    }


# ---------------------------------------------------------------- task preparation (model-independent)


rule blindspot_inputs:
    input:
        names="resources/blindspot/names.yaml",
        vocab="resources/blindspot/profiles.yaml",
        user=bs_user_inputs_file,
        raw=bs_fairness_raw,
    output:
        f"{BS_DIR}/{{task}}/inputs_rendered.parquet",
    log:
        "logs/blindspot/inputs/{task}.log",
    conda:
        "../envs/data.yaml"
    params:
        task="{task}",
        n_inputs=bs_n_inputs,
        seed=config["seed"],
        user_path=bs_user_inputs,
        manifest=config["manifest"],  # fairness tasks: the raw files are verified against it before they are read
        rewrite_enabled=BS["rewrite"]["enabled"],
    script:
        "../scripts/blindspot/inputs.py"


rule blindspot_rewrite:
    input:
        inputs=f"{BS_DIR}/{{task}}/inputs_rendered.parquet",
        prompt=f"{BS_PROMPTS}/rewrite.txt",
        weights=BS_ROLES["rewrite"].weights,
    output:
        f"{BS_DIR}/{{task}}/inputs.parquet",
        metrics=f"{JOB_METRICS}/blindspot/rewrite/{{task}}.json",
    log:
        "logs/blindspot/rewrite/{task}.log",
    benchmark:
        "results/benchmarks/blindspot/rewrite/{task}.tsv"
    conda:
        BS_ROLES["rewrite"].env
    threads: BS_ROLES["rewrite"].threads
    resources:
        gpu=BS_ROLES["rewrite"].gpus,
    params:
        **BS_ROLES["rewrite"].params,
        task="{task}",
        enabled=BS["rewrite"]["enabled"],
    script:
        "../scripts/blindspot/rewrite.py"


rule blindspot_embed:
    input:
        inputs=f"{BS_DIR}/{{task}}/inputs.parquet",
        weights=BS_EMBED_ROLE.weights,
    output:
        f"{BS_DIR}/{{task}}/embeddings.npy",
        metrics=f"{JOB_METRICS}/blindspot/embed/{{task}}.json",
    log:
        "logs/blindspot/embed/{task}.log",
    benchmark:
        "results/benchmarks/blindspot/embed/{task}.tsv"
    conda:
        BS_EMBED_ROLE.env
    threads: BS_EMBED_ROLE.threads
    resources:
        gpu=BS_EMBED_ROLE.gpus,
    params:
        **BS_EMBED_ROLE.params,
        embedder=BS["embedder"],
    script:
        "../scripts/blindspot/embed.py"


rule blindspot_cluster:
    input:
        inputs=f"{BS_DIR}/{{task}}/inputs.parquet",
        embeddings=f"{BS_DIR}/{{task}}/embeddings.npy",
    output:
        f"{BS_DIR}/{{task}}/clusters.parquet",
    log:
        "logs/blindspot/cluster/{task}.log",
    conda:
        "../envs/analysis.yaml"
    params:
        n_clusters=BS["n_clusters"],
        seed=config["seed"],
    script:
        "../scripts/blindspot/cluster.py"


rule blindspot_hypothesize:
    input:
        inputs=f"{BS_DIR}/{{task}}/inputs.parquet",
        clusters=f"{BS_DIR}/{{task}}/clusters.parquet",
        prompt=f"{BS_PROMPTS}/hypothesis.txt",
        task_prompt=bs_task_prompt,
        job=f"{BS_PROMPTS}/job_description.txt",
        weights=BS_ROLES["hypothesis"].weights,
    output:
        concepts=f"{BS_DIR}/{{task}}/concepts_generated.parquet",
        replies=f"{BS_DIR}/{{task}}/hypothesis_replies.csv",
        metrics=f"{JOB_METRICS}/blindspot/hypothesize/{{task}}.json",
    log:
        "logs/blindspot/hypothesize/{task}.log",
    benchmark:
        "results/benchmarks/blindspot/hypothesize/{task}.tsv"
    conda:
        BS_ROLES["hypothesis"].env
    threads: BS_ROLES["hypothesis"].threads
    resources:
        gpu=BS_ROLES["hypothesis"].gpus,
    params:
        **BS_ROLES["hypothesis"].params,
        task="{task}",
        enabled=BS["hypothesis"]["enabled"],
        per_cluster=BS["hypothesis"]["per_cluster"],
        batch_size=BS["hypothesis"]["batch_size"],
        max_prompts=BS["hypothesis"]["max_prompts"],
        min_concepts=BS["hypothesis"]["min_concepts"],
        max_concepts=BS["hypothesis"]["max_concepts"],
    script:
        "../scripts/blindspot/hypothesize.py"


rule blindspot_dedup:
    input:
        generated=f"{BS_DIR}/{{task}}/concepts_generated.parquet",
        curated=BS["curated"]["file"],
        prompt=f"{BS_PROMPTS}/dedup.txt",
        weights=BS_ROLES["dedup"].weights,
    output:
        merged=f"{BS_DIR}/{{task}}/concepts_merged.parquet",
        judgements=f"{BS_DIR}/{{task}}/dedup_judgements.csv",
        metrics=f"{JOB_METRICS}/blindspot/dedup/{{task}}.json",
    log:
        "logs/blindspot/dedup/{task}.log",
    benchmark:
        "results/benchmarks/blindspot/dedup/{task}.tsv"
    conda:
        BS_ROLES["dedup"].env
    threads: BS_ROLES["dedup"].threads
    resources:
        gpu=BS_ROLES["dedup"].gpus,
    params:
        **BS_ROLES["dedup"].params,
        task="{task}",
        curated_ids=BS["curated"]["ids"],
        enabled=BS["dedup"]["enabled"],
    script:
        "../scripts/blindspot/dedup.py"


rule blindspot_variations:
    input:
        concepts=f"{BS_DIR}/{{task}}/concepts_merged.parquet",
        inputs=f"{BS_DIR}/{{task}}/inputs.parquet",
        names="resources/blindspot/names.yaml",
        prompt=f"{BS_PROMPTS}/variation.txt",
        weights=BS_ROLES["variations"].weights,
    output:
        f"{BS_DIR}/{{task}}/variations.parquet",
        metrics=f"{JOB_METRICS}/blindspot/variations/{{task}}.json",
    log:
        "logs/blindspot/variations/{task}.log",
    benchmark:
        "results/benchmarks/blindspot/variations/{task}.tsv"
    conda:
        BS_ROLES["variations"].env
    threads: BS_ROLES["variations"].threads
    resources:
        gpu=BS_ROLES["variations"].gpus,
    params:
        **BS_ROLES["variations"].params,
        task="{task}",
    script:
        "../scripts/blindspot/variations.py"


rule blindspot_quality:
    input:
        concepts=f"{BS_DIR}/{{task}}/concepts_merged.parquet",
        variations=f"{BS_DIR}/{{task}}/variations.parquet",
        prompt=f"{BS_PROMPTS}/quality.txt",
        weights=BS_ROLES["quality"].weights,
    output:
        f"{BS_DIR}/{{task}}/concepts.parquet",
        metrics=f"{JOB_METRICS}/blindspot/quality/{{task}}.json",
    log:
        "logs/blindspot/quality/{task}.log",
    benchmark:
        "results/benchmarks/blindspot/quality/{task}.tsv"
    conda:
        BS_ROLES["quality"].env
    threads: BS_ROLES["quality"].threads
    resources:
        gpu=BS_ROLES["quality"].gpus,
    params:
        **BS_ROLES["quality"].params,
        task="{task}",
        enabled=BS["quality"]["enabled"],
        max_pairs=BS["quality"]["max_pairs"],
        min_rating=BS["quality"]["min_rating"],
        keep_share=BS["quality"]["keep_share"],
    script:
        "../scripts/blindspot/quality.py"


# ---------------------------------------------------------------- per target model: baseline and stages


rule blindspot_prefilter:
    input:
        inputs=f"{BS_DIR}/{{task}}/inputs.parquet",
        clusters=f"{BS_DIR}/{{task}}/clusters.parquet",
        prompt=bs_task_prompt,
        job=f"{BS_PROMPTS}/job_description.txt",
        weights=BS_TARGET_ROLE.weights,
    output:
        responses=f"{BS_DIR}/{{model}}/{{task}}/prefilter_responses.parquet",
        table=f"{BS_DIR}/{{model}}/{{task}}/prefilter.csv",
        clusters=f"{BS_DIR}/{{model}}/{{task}}/prefilter_clusters.parquet",
        metrics=f"{JOB_METRICS}/blindspot/prefilter/{{model}}/{{task}}.json",
    log:
        "logs/blindspot/prefilter/{model}/{task}.log",
    benchmark:
        "results/benchmarks/blindspot/prefilter/{model}/{task}.tsv"
    conda:
        BS_TARGET_ROLE.env
    threads: BS_TARGET_ROLE.threads
    resources:
        gpu=BS_TARGET_ROLE.gpus,
    params:
        **BS_TARGET_ROLE.params,
        task="{task}",
        responses_per_input=BS["prefilter"]["responses_per_input"],
        max_inputs=BS["prefilter"]["max_inputs"],
        force_decision=BS["target"]["force_decision"],
    script:
        "../scripts/blindspot/prefilter.py"


rule blindspot_baseline:
    input:
        inputs=f"{BS_DIR}/{{task}}/inputs.parquet",
        clusters=bs_clusters,
        prompt=bs_task_prompt,
        job=f"{BS_PROMPTS}/job_description.txt",
        weights=BS_TARGET_ROLE.weights,
    output:
        f"{BS_DIR}/{{model}}/{{task}}/baseline.parquet",
        metrics=f"{JOB_METRICS}/blindspot/baseline/{{model}}/{{task}}.json",
    log:
        "logs/blindspot/baseline/{model}/{task}.log",
    benchmark:
        "results/benchmarks/blindspot/baseline/{model}/{task}.tsv"
    conda:
        BS_TARGET_ROLE.env
    threads: BS_TARGET_ROLE.threads
    resources:
        gpu=BS_TARGET_ROLE.gpus,
    params:
        **BS_TARGET_ROLE.params,
        task="{task}",
        k0=BS["stages"]["k0"],
        max_stages=BS["stages"]["max_stages"],
        force_decision=BS["target"]["force_decision"],
    script:
        "../scripts/blindspot/baseline.py"


rule blindspot_baseline_judge:
    input:
        baseline=f"{BS_DIR}/{{model}}/{{task}}/baseline.parquet",
        concepts=f"{BS_DIR}/{{task}}/concepts.parquet",
        inputs=f"{BS_DIR}/{{task}}/inputs.parquet",
        task_prompt=bs_task_prompt,
        job=f"{BS_PROMPTS}/job_description.txt",
        prompt=f"{BS_PROMPTS}/verbalization.txt",
        weights=BS_ROLES["verbalization"].weights,
    output:
        verdicts=f"{BS_DIR}/{{model}}/{{task}}/baseline_verdicts.parquet",
        table=f"{BS_DIR}/{{model}}/{{task}}/baseline_filter.csv",
        entry=f"{BS_DIR}/{{model}}/{{task}}/baseline_entry.json",
        metrics=f"{JOB_METRICS}/blindspot/baseline_judge/{{model}}/{{task}}.json",
    log:
        "logs/blindspot/baseline_judge/{model}/{task}.log",
    benchmark:
        "results/benchmarks/blindspot/baseline_judge/{model}/{task}.tsv"
    conda:
        BS_ROLES["verbalization"].env
    threads: BS_ROLES["verbalization"].threads
    resources:
        gpu=BS_ROLES["verbalization"].gpus,
    params:
        **BS_ROLES["verbalization"].params,
        task="{task}",
        threshold=BS["stages"]["baseline_verbalization_threshold"],
        method=BS["verbalization"]["judge"],
    script:
        "../scripts/blindspot/baseline_judge.py"


rule blindspot_stage_respond:
    input:
        entry=bs_entry,
        previous=bs_previous("responses.parquet"),
        variations=f"{BS_DIR}/{{task}}/variations.parquet",
        clusters=bs_clusters,
        prompt=bs_task_prompt,
        job=f"{BS_PROMPTS}/job_description.txt",
        weights=BS_TARGET_ROLE.weights,
    output:
        f"{BS_DIR}/{{model}}/{{task}}/stage-{{stage}}/responses.parquet",
        metrics=f"{JOB_METRICS}/blindspot/stage_respond/{{model}}/{{task}}/stage-{{stage}}.json",
    log:
        "logs/blindspot/stage_respond/{model}/{task}/stage-{stage}.log",
    benchmark:
        "results/benchmarks/blindspot/stage_respond/{model}/{task}/stage-{stage}.tsv"
    conda:
        BS_TARGET_ROLE.env
    threads: BS_TARGET_ROLE.threads
    resources:
        gpu=BS_TARGET_ROLE.gpus,
    params:
        **BS_TARGET_ROLE.params,
        task="{task}",
        previous=bs_previous_path("responses.parquet"),
        k0=BS["stages"]["k0"],
        max_stages=BS["stages"]["max_stages"],
        force_decision=BS["target"]["force_decision"],
    script:
        "../scripts/blindspot/stage_respond.py"


rule blindspot_stage_judge:
    input:
        entry=bs_entry,
        responses=f"{BS_DIR}/{{model}}/{{task}}/stage-{{stage}}/responses.parquet",
        previous=bs_previous("verdicts.parquet"),
        concepts=f"{BS_DIR}/{{task}}/concepts.parquet",
        clusters=bs_clusters,
        inputs=f"{BS_DIR}/{{task}}/inputs.parquet",
        task_prompt=bs_task_prompt,
        job=f"{BS_PROMPTS}/job_description.txt",
        prompt=f"{BS_PROMPTS}/verbalization.txt",
        weights=BS_ROLES["verbalization"].weights,
    output:
        f"{BS_DIR}/{{model}}/{{task}}/stage-{{stage}}/verdicts.parquet",
        metrics=f"{JOB_METRICS}/blindspot/stage_judge/{{model}}/{{task}}/stage-{{stage}}.json",
    log:
        "logs/blindspot/stage_judge/{model}/{task}/stage-{stage}.log",
    benchmark:
        "results/benchmarks/blindspot/stage_judge/{model}/{task}/stage-{stage}.tsv"
    conda:
        BS_ROLES["verbalization"].env
    threads: BS_ROLES["verbalization"].threads
    resources:
        gpu=BS_ROLES["verbalization"].gpus,
    params:
        **BS_ROLES["verbalization"].params,
        task="{task}",
        previous=bs_previous_path("verdicts.parquet"),
        k0=BS["stages"]["k0"],
        max_stages=BS["stages"]["max_stages"],
        stage_params=bs_stage_params(),
        method=BS["verbalization"]["judge"],
    script:
        "../scripts/blindspot/stage_judge.py"


checkpoint blindspot_stage_decide:
    input:
        entry=bs_entry,
        responses=f"{BS_DIR}/{{model}}/{{task}}/stage-{{stage}}/responses.parquet",
        verdicts=f"{BS_DIR}/{{model}}/{{task}}/stage-{{stage}}/verdicts.parquet",
        clusters=bs_clusters,
    output:
        decision=f"{BS_DIR}/{{model}}/{{task}}/stage-{{stage}}/decision.json",
        tests=f"{BS_DIR}/{{model}}/{{task}}/stage-{{stage}}/tests.csv",
    log:
        "logs/blindspot/stage_decide/{model}/{task}/stage-{stage}.log",
    conda:
        "../envs/analysis.yaml"
    params:
        k0=BS["stages"]["k0"],
        max_stages=BS["stages"]["max_stages"],
        stage_params=bs_stage_params(),
        method=BS["verbalization"]["judge"],
    script:
        "../scripts/blindspot/stage_decide.py"


rule blindspot_audit:
    input:
        decisions=bs_stage_files("decision.json"),
        tests=bs_stage_files("tests.csv"),
        responses=bs_stage_files("responses.parquet"),
        entry=f"{BS_DIR}/{{model}}/{{task}}/baseline_entry.json",
        baseline=f"{BS_DIR}/{{model}}/{{task}}/baseline.parquet",
        baseline_table=f"{BS_DIR}/{{model}}/{{task}}/baseline_filter.csv",
        concepts=f"{BS_DIR}/{{task}}/concepts.parquet",
        merged=f"{BS_DIR}/{{task}}/concepts_merged.parquet",
        variations=f"{BS_DIR}/{{task}}/variations.parquet",
    output:
        stages=f"{BS_DIR}/{{model}}/{{task}}/stages.csv",
        flagged=f"{BS_DIR}/{{model}}/{{task}}/flagged.csv",
        funnel=f"{BS_DIR}/{{model}}/{{task}}/funnel.csv",
        costs=f"{BS_DIR}/{{model}}/{{task}}/costs.csv",
        examples=f"{BS_DIR}/{{model}}/{{task}}/examples.csv",
    log:
        "logs/blindspot/audit/{model}/{task}.log",
    conda:
        "../envs/analysis.yaml"
    params:
        examples_per_concept=BS["examples_per_concept"],
    script:
        "../scripts/blindspot/audit.py"


rule blindspot_tables:
    input:
        flagged=bs_audit_files("flagged.csv"),
        funnel=bs_audit_files("funnel.csv"),
        costs=bs_audit_files("costs.csv"),
        examples=bs_audit_files("examples.csv"),
        stages=bs_audit_files("stages.csv"),
        replies=bs_task_files("hypothesis_replies.csv"),
        generated=bs_task_files("concepts_generated.parquet"),
        judgements=bs_task_files("dedup_judgements.csv"),
        variations=bs_task_files("variations.parquet"),
        rediscovery=bs_rediscovery_files(),
        paper="resources/paper/blindspot.yaml",
        engines=blindspot_job_metrics,
    output:
        flagged_csv=report(
            f"{BS_DIR}/tables/flagged.csv",
            caption="../report/captions/blindspot/flagged.rst",
            category="blindspot",
            subcategory="tables",
        ),
        flagged_md=f"{BS_DIR}/tables/flagged.md",
        funnel_csv=f"{BS_DIR}/tables/funnel.csv",
        costs_csv=report(
            f"{BS_DIR}/tables/costs.csv",
            caption="../report/captions/blindspot/costs.rst",
            category="blindspot",
            subcategory="tables",
        ),
        costs_md=f"{BS_DIR}/tables/costs.md",
        model_outputs_csv=f"{BS_DIR}/tables/model_outputs.csv",
        examples_md=report(
            f"{BS_DIR}/tables/examples.md",
            caption="../report/captions/blindspot/examples.rst",
            category="blindspot",
            subcategory="tables",
        ),
        funnel_png=report(
            f"{BS_DIR}/figures/funnel.png",
            caption="../report/captions/blindspot/funnel.rst",
            category="blindspot",
            subcategory="figures",
        ),
        report=report(
            f"{BS_DIR}/report.md",
            caption="../report/captions/blindspot/report.rst",
            category="blindspot",
            subcategory="report",
        ),
    log:
        "logs/blindspot/tables/all.log",
    conda:
        "../envs/analysis.yaml"
    params:
        summary=bs_summary(),
    script:
        "../scripts/blindspot/tables.py"


rule blindspot_concept_pages:
    # one evidence page per flagged concept; the flagged set is known only after the staged testing,
    # so one job writes the folder: index.md, <model>/<task>/<concept_id>.md and .png
    input:
        flagged=f"{BS_DIR}/tables/flagged.csv",
        stages=bs_audit_files("stages.csv"),
        concepts=bs_task_files("concepts.parquet"),
        responses=bs_all_stage_files("responses.parquet"),
        verdicts=bs_all_stage_files("verdicts.parquet"),
    output:
        directory(f"{BS_DIR}/concepts"),
    log:
        "logs/blindspot/concept_pages/all.log",
    conda:
        "../envs/analysis.yaml"
    params:
        per_concept=BS["examples_per_concept"],
    script:
        "../scripts/blindspot/concept_pages.py"


rule blindspot_fairness_rediscovery:
    # does the audit of a fairness task find the protected attribute the fairness study varies by hand?
    input:
        generated=expand(f"{BS_DIR}/{{task}}/concepts_generated.parquet", task=bs_fairness_tasks()),
        merged=expand(f"{BS_DIR}/{{task}}/concepts_merged.parquet", task=bs_fairness_tasks()),
        stages=expand(f"{BS_DIR}/{{model}}/{{task}}/stages.csv", model=BS["models"], task=bs_fairness_tasks()),
        flagged=expand(f"{BS_DIR}/{{model}}/{{task}}/flagged.csv", model=BS["models"], task=bs_fairness_tasks()),
    output:
        csv=report(
            f"{BS_DIR}/tables/fairness_rediscovery.csv",
            caption="../report/captions/blindspot/fairness_rediscovery.rst",
            category="blindspot",
            subcategory="tables",
        ),
        md=f"{BS_DIR}/tables/fairness_rediscovery.md",
    log:
        "logs/blindspot/fairness_rediscovery/all.log",
    conda:
        "../envs/analysis.yaml"
    params:
        tasks=bs_fairness_tasks(),
    script:
        "../scripts/blindspot/rediscovery.py"


rule blindspot_rediscovery:
    input:
        f"{BS_DIR}/tables/fairness_rediscovery.csv",
        f"{BS_DIR}/tables/fairness_rediscovery.md",


# ---------------------------------------------------------------- bring-your-own outcomes (no model)


# the stage parameters are blindspot.byo.stages (the paper's by default), never the embedded default's
rule blindspot_byo:
    input:
        outcomes=BS["byo"]["outcomes"] or [],
        baseline=BS["byo"]["baseline"] or [],
        paper="resources/paper/blindspot.yaml",
    output:
        stages=f"{BS_DIR}/byo/stages.csv",
        flagged=f"{BS_DIR}/byo/flagged.csv",
        flagged_md=f"{BS_DIR}/byo/flagged.md",
        funnel=f"{BS_DIR}/byo/funnel.csv",
        costs=f"{BS_DIR}/byo/costs.csv",
        stage_params=f"{BS_DIR}/byo/stage_params.csv",
        report=f"{BS_DIR}/byo/report.md",
    log:
        "logs/blindspot/byo/all.log",
    conda:
        "../envs/analysis.yaml"
    params:
        k0=BS["byo"]["stages"]["k0"],
        max_stages=BS["byo"]["stages"]["max_stages"],
        stage_params=bs_stage_params(BS["byo"]["stages"]),
    script:
        "../scripts/blindspot/byo.py"


# ---------------------------------------------------------------- named targets


rule blindspot_flagged:
    input:
        f"{BS_DIR}/tables/flagged.csv",
        f"{BS_DIR}/tables/flagged.md",


rule blindspot_funnel:
    input:
        f"{BS_DIR}/figures/funnel.png",
        f"{BS_DIR}/tables/funnel.csv",


rule blindspot_costs:
    input:
        f"{BS_DIR}/tables/costs.csv",
        f"{BS_DIR}/tables/costs.md",


rule blindspot_examples:
    input:
        f"{BS_DIR}/tables/examples.md",


rule blindspot_concepts:
    input:
        f"{BS_DIR}/concepts",


rule blindspot_report:
    input:
        f"{BS_DIR}/report.md",
        f"{BS_DIR}/concepts",


def blindspot_targets():
    """Final products of the blindspot study for the active config."""
    if BS["byo"]["outcomes"]:
        return [
            f"{BS_DIR}/byo/flagged.csv",
            f"{BS_DIR}/byo/flagged.md",
            f"{BS_DIR}/byo/funnel.csv",
            f"{BS_DIR}/byo/costs.csv",
            f"{BS_DIR}/byo/stage_params.csv",
            f"{BS_DIR}/byo/report.md",
        ]
    return (
        [
            f"{BS_DIR}/tables/{name}"
            for name in (
                "flagged.csv",
                "flagged.md",
                "funnel.csv",
                "costs.csv",
                "costs.md",
                "model_outputs.csv",
                "examples.md",
            )
        ]
        + [f"{BS_DIR}/figures/funnel.png", f"{BS_DIR}/report.md", f"{BS_DIR}/concepts"]
        + bs_rediscovery_files(("csv", "md"))
    )


rule blindspot:
    input:
        blindspot_targets(),
