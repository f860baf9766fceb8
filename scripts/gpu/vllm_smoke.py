"""GPU check of the vLLM backend, end to end: load a vllm model of the registry, generate, score
Yes/No, probe prefixes, fused generate-and-probe, cache hits; prints throughput.

    python scripts/gpu/vllm_smoke.py [--model qwen2.5-0.5b-instruct-awq] [--registry config/models.yaml]
        [--weights <snapshot folder>] [--max-tokens 256]

Run it on a machine with a GPU after `pip install -e .[vllm,hub]` (or in envs/vllm.yaml). The default
model is a 0.7 GB AWQ checkpoint: about a minute including the download. A registry model's pinned,
sha256-checked snapshot is fetched into resources/models/<id>/ when missing (export HF_TOKEN for
gated ones). `--model qwq-32b-awq` checks that a 32B AWQ model fits one 80 GB GPU with the registry's
gpu_memory_utilization / max_model_len. Exits non-zero when a check fails.

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
from thinkbias.llm.registry import read_registry  # noqa: E402
from thinkbias.llm.smoke import run_smoke  # noqa: E402
from thinkbias.llm.vllm_backend import engine_kwargs  # noqa: E402
from thinkbias.models.hub import download_snapshot  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="qwen2.5-0.5b-instruct-awq")
    ap.add_argument("--registry", default="config/models.yaml")
    ap.add_argument("--weights", default="")
    ap.add_argument("--max-tokens", type=int, default=256)
    args = ap.parse_args()
    spec = load_model_spec(args.registry, args.model, weights=args.weights)
    if spec.backend != "vllm":
        sys.exit(f"model '{args.model}' has backend {spec.backend}, not vllm")
    entry = read_registry(args.registry)[args.model]
    folder = Path("resources/models") / args.model
    if not args.weights and "quantize" not in entry and not all((folder / f["name"]).exists() for f in entry["files"]):
        download_snapshot(
            entry["source"]["repo"], entry["source"]["revision"], entry["files"], folder, gated=bool(entry.get("gated"))
        )
        spec = load_model_spec(args.registry, args.model, weights=str(folder))
    print("vllm.LLM arguments:", json.dumps(engine_kwargs(spec)))
    with tempfile.TemporaryDirectory() as cache, open_engine(spec, cache) as engine:
        result = run_smoke(engine, max_tokens=args.max_tokens, n_requests=32)
    print(json.dumps(result, indent=2))
    print(f"OK: vLLM backend works on {spec.id} ({result['tokens_per_s']:.0f} tokens/s over 32 requests)")


if __name__ == "__main__":
    main()
