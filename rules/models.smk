# Model weights that are not in the manifest: pinned hub snapshots (one rule per registry model).


def hub_models():
    """Registry models whose weights come from a pinned hub snapshot (not from the manifest)."""
    manifest = Path(config["manifest"])
    listed = yaml.safe_load(manifest.read_text()).get("files", {}) if manifest.exists() else {}
    out = {}
    for model_id, entry in REGISTRY.items():
        files = entry.get("files", [])
        if not files or "source" not in entry or "quantize" in entry:
            continue
        if any(f"models/{model_id}/{f['name']}" in listed for f in files):
            continue
        out[model_id] = entry
    return out


for _model_id, _entry in hub_models().items():

    rule:
        name:
            f"weights_{_model_id.replace('-', '_').replace('.', '_')}"
        output:
            [f"resources/models/{_model_id}/{f['name']}" for f in _entry["files"]],
        params:
            entry=_entry,
        log:
            f"logs/models/weights/{_model_id}.log",
        conda:
            "../envs/hub.yaml"
        script:
            "../scripts/models/download_weights.py"


def quantized_models():
    """Registry models produced by quantizing another registry model (``quantize:`` key)."""
    return {m: e for m, e in REGISTRY.items() if "quantize" in e}


for _model_id, _entry in quantized_models().items():

    rule:
        name:
            f"quantize_{_model_id.replace('-', '_').replace('.', '_')}"
        input:
            model_files(_entry["quantize"]["from"]),
        output:
            [f"resources/models/{_model_id}/{f['name']}" for f in _entry["files"]],
        params:
            settings={k: v for k, v in _entry["quantize"].items() if k not in ("from", "method")},
            source=_entry["quantize"]["from"],
        resources:
            gpu=1,
            mem_mb=120000,
            runtime=240,
        threads: 8
        log:
            f"logs/models/quantize/{_model_id}.log",
        benchmark:
            f"results/benchmarks/models/quantize/{_model_id}.tsv"
        conda:
            "../envs/awq.yaml"
        script:
            "../scripts/models/quantize_awq.py"
