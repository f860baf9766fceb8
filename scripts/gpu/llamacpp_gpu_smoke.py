"""GPU check of the llama.cpp backend: the same model on CPU and fully offloaded (n_gpu_layers=-1),
end to end (generate, score, probe, fused generate-and-probe, cache), with both throughputs, and
the batched / sequential throughput ratio at 16 sequences with full offload (extra.n_parallel,
goal >= 5x: a GPU decode step of a 7-8B model costs about the same for 1 and for 16 sequences).

    python scripts/gpu/llamacpp_gpu_smoke.py [--model smollm2-135m] [--registry config/models.yaml]
    python scripts/gpu/llamacpp_gpu_smoke.py --model r1-distill-qwen-7b-q4km --skip-cpu
    python scripts/gpu/llamacpp_gpu_smoke.py --device cpu --min-batch-ratio 0   # the same checks, CPU only

Needs llama-cpp-python built with CUDA (the env envs/llamacpp-cuda.yaml; elsewhere the offloaded run
stops at load: llama.cpp has no GPU); exits non-zero when a check fails, when the GPU run is not
faster than the CPU run, or when the batched ratio is below ``--min-batch-ratio``. ``--device cpu``
runs everything on the CPU (no GPU comparison): what the tests run on the embedded model.

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

from thinkbias.llm import ModelSpec, load_model_spec, open_engine  # noqa: E402
from thinkbias.llm.llamacpp import effective_threads  # noqa: E402
from thinkbias.llm.smoke import run_smoke  # noqa: E402
from thinkbias.llm.throughput import batching_ratios, ratio_table  # noqa: E402


def offloaded(spec: ModelSpec, layers: int) -> ModelSpec:
    """``spec`` with ``layers`` offloaded, asking for one GPU exactly when it offloads any."""
    return replace(spec, gpus=int(layers != 0), extra={**spec.extra, "n_gpu_layers": layers})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--registry", default="config/models.yaml")
    ap.add_argument("--weights", default="")
    ap.add_argument("--max-tokens", type=int, default=256)
    ap.add_argument("--skip-cpu", action="store_true", help="do not run the CPU comparison (large models)")
    ap.add_argument("--device", choices=["gpu", "cpu"], default="gpu", help="cpu: every check on the CPU only")
    ap.add_argument("--batch-sequences", type=int, default=16, help="sequences of the batching ratio (0: skip it)")
    ap.add_argument("--batch-tokens", type=int, default=64, help="greedy tokens per request of the batching ratio")
    ap.add_argument("--batch-reps", type=int, default=3)
    ap.add_argument("--min-batch-ratio", type=float, default=5.0)
    args = ap.parse_args()
    spec = load_model_spec(args.registry, args.model, weights=args.weights)
    if spec.backend != "llamacpp":
        sys.exit(f"model '{args.model}' has backend {spec.backend}, not llamacpp")
    results = {}
    if args.device == "cpu":
        runs = [("cpu", 0)]
    else:
        runs = [("gpu", -1)] + ([] if args.skip_cpu else [("cpu", 0)])
    for name, layers in runs:
        s = offloaded(spec, layers)
        with tempfile.TemporaryDirectory() as cache, open_engine(s, cache) as engine:
            results[name] = run_smoke(engine, max_tokens=args.max_tokens)
    main_run = runs[0][0]
    if args.batch_sequences > 0:
        s = offloaded(spec, runs[0][1])
        [row] = batching_ratios(
            s,
            [args.batch_sequences],
            effective_threads(None, s.extra),
            args.batch_tokens,
            args.batch_reps,
            n_ctx=min(spec.n_ctx, 1024),
        )
        print(ratio_table([row]))
        results[main_run]["batched_over_sequential"] = row.ratio
    print(json.dumps(results, indent=2))
    if "gpu" in results and "cpu" in results and results["gpu"]["tokens_per_s"] <= results["cpu"]["tokens_per_s"]:
        sys.exit("GPU run is not faster than CPU: is llama-cpp-python built with CUDA?")
    ratio = results[main_run].get("batched_over_sequential")
    if ratio is not None and ratio < args.min_batch_ratio:
        sys.exit(
            f"batched / sequential throughput at {args.batch_sequences} sequences is {ratio:.2f}, "
            f"below {args.min_batch_ratio}"
        )
    print(
        f"OK: llama.cpp on {main_run} works on {spec.id} ({results[main_run]['tokens_per_s']:.0f} tokens/s"
        + (f", batched x{ratio:.2f} at {args.batch_sequences} sequences)" if ratio is not None else ")")
    )


if __name__ == "__main__":
    main()
