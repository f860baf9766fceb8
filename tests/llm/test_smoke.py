"""The GPU smoke checks' routine, run here on the embedded model on CPU, and the scripts around it."""

import re
import subprocess
import sys

import pytest

from tests.helpers import REPO
from thinkbias.llm.registry import read_registry
from thinkbias.llm.smoke import run_smoke

pytestmark = pytest.mark.slow


def test_run_smoke_on_embedded_model(engine):
    out = run_smoke(engine, max_tokens=24, n_requests=2)
    assert out["tokens"] > 0 and out["tokens_per_s"] > 0
    assert 0 <= out["p_yes_nothink"] <= 1 and len(out["fused_p_yes"]) == 3


@pytest.mark.parametrize("script", ["vllm_smoke.py", "llamacpp_gpu_smoke.py"])
def test_gpu_smoke_scripts_import_and_default_to_registry_models(script):
    proc = subprocess.run(
        [sys.executable, str(REPO / "scripts/gpu" / script), "--help"], capture_output=True, text=True, cwd=REPO
    )
    assert proc.returncode == 0, proc.stderr
    text = (REPO / "scripts/gpu" / script).read_text()
    default = re.search(r'add_argument\("--model", default="([\w.-]+)"\)', text)
    named = re.search(r'GPU_MODEL, CPU_MODEL = "([\w.-]+)", "([\w.-]+)"', text)  # vllm_smoke: --device picks one
    models = default.groups() if default else named.groups() if named else ()
    assert models and set(models) <= set(read_registry(REPO / "config/models.yaml"))


def test_vllm_smoke_model_is_small_pinned_and_checked():
    entry = read_registry(REPO / "config/models.yaml")["qwen2.5-0.5b-instruct-awq"]
    assert entry["backend"] == "vllm" and not entry["gated"] and entry["size_gb"] < 1
    assert len(entry["source"]["revision"]) == 40 and all(len(f.get("sha256", "")) == 64 for f in entry["files"])


def test_llamacpp_gpu_smoke_script_runs_its_cpu_path_with_the_batching_ratio(embedded_model):
    proc = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts/gpu/llamacpp_gpu_smoke.py"),
            "--device",
            "cpu",
            "--max-tokens",
            "16",
            "--batch-sequences",
            "3",
            "--batch-tokens",
            "6",
            "--batch-reps",
            "1",
            "--min-batch-ratio",
            "0",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert re.search(r"^\| \d+ \| 3 \| [\d.]+ \| [\d.]+ \| [\d.]+ ", proc.stdout, re.M), proc.stdout
    assert '"batched_over_sequential"' in proc.stdout and "OK: llama.cpp on cpu works on smollm2-135m" in proc.stdout
    # below the required ratio the script fails, saying why
    fail = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts/gpu/llamacpp_gpu_smoke.py"),
            "--device",
            "cpu",
            "--max-tokens",
            "8",
            "--batch-sequences",
            "2",
            "--batch-tokens",
            "4",
            "--batch-reps",
            "1",
            "--min-batch-ratio",
            "1000",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=900,
    )
    assert fail.returncode != 0 and "below 1000" in fail.stderr
