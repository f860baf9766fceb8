#!/usr/bin/env bash
# Run by Snakemake once, inside the new llamacpp-cuda env (--sdm conda): build llama-cpp-python with the
# project's runtime-dispatch settings and the CUDA backend (or reuse the wheel of the same build
# configuration) and install it. PYTHONPATH holds the workflow folder (rules/common.smk), where
# thinkbias/build/ lives. The build needs no GPU; THINKBIAS_CUDA_ARCHITECTURES overrides the architectures.
set -euo pipefail
python -m thinkbias.build.llamacpp_wheel install --cuda "${THINKBIAS_WHEEL_CACHE:-$HOME/.cache/thinkbias/wheels}"
