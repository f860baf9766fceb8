"""GPU check of the vLLM backend, end to end: load a vllm model of the registry, generate, score
Yes/No, probe prefixes, fused generate-and-probe, cache hits; prints throughput.

    python scripts/gpu/vllm_smoke.py --model <vllm registry id> [--registry config/models.yaml]
        [--weights <snapshot folder or hub id>] [--max-tokens 256]

Run it on a machine with a GPU after `pip install -e .[vllm]` (or in envs/vllm.yaml); it exits
non-zero when a check fails. A small model is enough (e.g. an AWQ 7-8B model of the registry).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from thinkbias.llm import load_model_spec, open_engine  # noqa: E402
from thinkbias.llm.smoke import run_smoke  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True)
    ap.add_argument("--registry", default="config/models.yaml")
    ap.add_argument("--weights", default="")
    ap.add_argument("--max-tokens", type=int, default=256)
    args = ap.parse_args()
    spec = load_model_spec(args.registry, args.model, weights=args.weights)
    if spec.backend != "vllm":
        sys.exit(f"model '{args.model}' has backend {spec.backend}, not vllm")
    with tempfile.TemporaryDirectory() as cache, open_engine(spec, cache) as engine:
        result = run_smoke(engine, max_tokens=args.max_tokens, n_requests=32)
    print(json.dumps(result, indent=2))
    print(f"OK: vLLM backend works on {spec.id} ({result['tokens_per_s']:.0f} tokens/s over 32 requests)")


if __name__ == "__main__":
    main()
