"""GPU check of the llama.cpp backend: the same model on CPU and fully offloaded (n_gpu_layers=-1),
end to end (generate, score, probe, fused generate-and-probe, cache), with both throughputs.

    python scripts/gpu/llamacpp_gpu_smoke.py [--model smollm2-135m] [--registry config/models.yaml]

Needs llama-cpp-python built with CUDA (CMAKE_ARGS="-DGGML_CUDA=on"); exits non-zero when a check
fails or when the GPU run is not faster than the CPU run (a sign the build has no GPU support).

Computes `thinkbias.llm.smoke:run_smoke`.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from thinkbias.llm import load_model_spec, open_engine  # noqa: E402
from thinkbias.llm.smoke import run_smoke  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--registry", default="config/models.yaml")
    ap.add_argument("--weights", default="")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--skip-cpu", action="store_true", help="do not run the CPU comparison (large models)")
    args = ap.parse_args()
    spec = load_model_spec(args.registry, args.model, weights=args.weights)
    if spec.backend != "llamacpp":
        sys.exit(f"model '{args.model}' has backend {spec.backend}, not llamacpp")
    results = {}
    runs = [("gpu", -1)] + ([] if args.skip_cpu else [("cpu", 0)])
    for name, layers in runs:
        s = replace(spec, extra={**spec.extra, "n_gpu_layers": layers})
        with tempfile.TemporaryDirectory() as cache, open_engine(s, cache) as engine:
            results[name] = run_smoke(engine, max_tokens=args.max_tokens)
    print(json.dumps(results, indent=2))
    if "cpu" in results and results["gpu"]["tokens_per_s"] <= results["cpu"]["tokens_per_s"]:
        sys.exit("GPU run is not faster than CPU: is llama-cpp-python built with CUDA?")
    print(f"OK: llama.cpp GPU offload works on {spec.id} ({results['gpu']['tokens_per_s']:.0f} tokens/s)")


if __name__ == "__main__":
    main()
