#!/usr/bin/env bash
# Run by Snakemake once, inside the new llamacpp env (--sdm conda): build llama-cpp-python with the
# project's runtime-dispatch settings (or reuse the wheel of the same build configuration) and install
# it. PYTHONPATH holds the workflow folder (rules/common.smk), where thinkbias/build/ lives.
set -euo pipefail
python -m thinkbias.build.llamacpp_wheel install "${THINKBIAS_WHEEL_CACHE:-$HOME/.cache/thinkbias/wheels}"
