#!/usr/bin/env python3
"""Set up thinkbias in a local virtual environment, then run the workflow or the tests.

    python3 tb.py run  [snakemake args...]   # the embedded default, end to end (CPU, offline)
    python3 tb.py test [pytest args...]      # the test suite (THINKBIAS_SKIP_AWQ=1: without the AWQ test)
    python3 tb.py setup                      # only create/update the environment

Needs nothing but Python >= 3.11 and a C/C++ compiler (llama-cpp-python builds from source once,
about 8 minutes on 2 cores; the wheel is cached in ~/.cache/thinkbias/wheels and reused).
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
PY = VENV / "bin" / "python"
WHEELS = Path(os.environ.get("THINKBIAS_WHEEL_CACHE", Path.home() / ".cache" / "thinkbias" / "wheels"))
LLAMA = "llama-cpp-python==0.3.36"
EXTRAS = "llamacpp,server,api,hub,slurm,test,lint"
# The tests also run AutoAWQ for real on the CPU (tests/models/test_awq_cpu.py): a CPU build of torch
# (from PyTorch's CPU index, or a local wheel pip already knows), AutoAWQ's pinned stack, then AutoAWQ
# itself without its declared dependencies (it pins an old CUDA torch; it runs with this one).
AWQ_CPU_STACK = [
    "torch==2.13.0+cpu",
    "transformers==4.51.3",
    "accelerate==1.15.0",
    "datasets==5.0.1",
    "zstandard==0.25.0",
]
AWQ = "autoawq==0.2.9"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def sh(cmd: list[str], **kw) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], check=True, **kw)


def install_stamp() -> str:
    """Changes whenever the declared dependencies change."""
    return hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()[:16]


def setup() -> None:
    """Create .venv and install the project with every extra a CPU machine can use."""
    if sys.version_info < (3, 11):
        sys.exit(f"thinkbias needs Python >= 3.11 (this is {sys.version.split()[0]})")
    if not PY.exists():
        venv.create(VENV, with_pip=True)
    stamp = VENV / f".thinkbias-installed-{install_stamp()}"
    if stamp.exists():
        return
    sh([PY, "-m", "pip", "install", "--quiet", "--upgrade", "pip", "wheel"])
    WHEELS.mkdir(parents=True, exist_ok=True)
    if not list(WHEELS.glob("llama_cpp_python-0.3.36-*.whl")):
        env = {**os.environ, "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2)}
        sh([PY, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", WHEELS, LLAMA], env=env)
    sh([PY, "-m", "pip", "install", "--quiet", "--find-links", WHEELS, "-e", f"{ROOT}[{EXTRAS}]"])
    for old in VENV.glob(".thinkbias-installed-*"):
        old.unlink()
    stamp.touch()


def setup_awq_cpu() -> None:
    """Install the CPU AutoAWQ stack the quantization test needs (once per stack version)."""
    stamp = VENV / f".thinkbias-awq-{hashlib.sha256(' '.join(AWQ_CPU_STACK + [AWQ]).encode()).hexdigest()[:12]}"
    if stamp.exists():
        return
    # torch alone through the CPU index (asked once, not for every dependency), then the rest from PyPI
    sh([PY, "-m", "pip", "install", "--quiet", "--no-deps", "--extra-index-url", TORCH_CPU_INDEX, AWQ_CPU_STACK[0]])
    sh([PY, "-m", "pip", "install", "--quiet", *AWQ_CPU_STACK])
    sh([PY, "-m", "pip", "install", "--quiet", "--no-deps", AWQ])
    for old in VENV.glob(".thinkbias-awq-*"):
        old.unlink()
    stamp.touch()


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("run", "test", "setup"):
        print(__doc__)
        return 2
    setup()
    env = {**os.environ, "PATH": f"{VENV / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    if argv[0] == "run":
        return subprocess.call([PY, "-m", "snakemake", "--cores", "2", *argv[1:]], cwd=ROOT, env=env)
    if argv[0] == "test":
        if os.environ.get("THINKBIAS_SKIP_AWQ") != "1":
            try:
                setup_awq_cpu()
            except subprocess.CalledProcessError:
                sys.exit(
                    "could not install the CPU build of torch and AutoAWQ's stack for the AWQ test "
                    f"(needs {TORCH_CPU_INDEX} or a local torch wheel pip knows); "
                    "THINKBIAS_SKIP_AWQ=1 runs the suite without that test"
                )
            env["THINKBIAS_REQUIRE_AWQ"] = "1"  # the AutoAWQ test must run, not skip
        return subprocess.call([PY, "-m", "pytest", "-q", "-rs", *argv[1:]], cwd=ROOT, env=env)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
