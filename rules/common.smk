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

import yaml

from thinkbias.llm.registry import load_model_spec

# Jobs (also in conda envs and on cluster nodes) import the thinkbias library from the workflow folder.
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (workflow.basedir, os.environ.get("PYTHONPATH", "")) if p
)

REGISTRY = yaml.safe_load(Path(config["registry"]).read_text())
CACHE_DIR = config["cache_dir"]
# each model job's metrics file (thinkbias.llm.metrics), at its benchmark file's path under this root
JOB_METRICS = "results/job_metrics"
STUDIES = ("fairness", "position", "blindspot")


def registry_entry(model_id):
    """The registry entry of a model, with a clear error for an unknown id."""
    if model_id not in REGISTRY:
        raise ValueError(
            f"model '{model_id}' is not in the registry {config['registry']} "
            f"(known: {', '.join(sorted(REGISTRY))})"
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
    """GPUs a job of this model needs: the registry's count (vLLM needs at least one; llama.cpp
    uses one when its entry offloads layers to a GPU; API models need none)."""
    entry = registry_entry(model_id)
    if entry["backend"] == "openai":
        return 0
    gpus = int(entry.get("gpus", 0))
    return max(gpus, 1) if entry["backend"] == "vllm" else gpus


def gpus_for_wildcards(wildcards):
    """`resources: gpu=` callable for rules with a {model} wildcard."""
    return gpus_for(wildcards.model)


def llm_env(wildcards):
    """The conda env of an LLM job: one per backend."""
    return f"../envs/{registry_entry(wildcards.model)['backend']}.yaml"


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
