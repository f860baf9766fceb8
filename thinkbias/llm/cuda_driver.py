"""The check, before vLLM loads on a GPU, that the NVIDIA driver can run the CUDA torch was built for.

``envs/vllm.yaml`` pins vLLM 0.33.0, which installs torch 2.14.0 built for CUDA 13. A driver older
than CUDA 13 (before R580) cannot run it, and vLLM then fails at start with an error that names
neither the driver nor the fix. CUDA's minor-version compatibility lets a build for 13.x run on any
driver of major version 13 or newer, so only the major versions are compared.
"""

from __future__ import annotations

import re

# the first driver branch of each CUDA major version (NVIDIA's CUDA compatibility table)
FIRST_DRIVER = {11: "R450", 12: "R525", 13: "R580"}


class CudaDriverError(RuntimeError):
    """The NVIDIA driver cannot run the CUDA version torch was built for."""


def parse_cuda_version(text: str) -> tuple[int, int]:
    """``"13.0"`` -> (13, 0)."""
    m = re.fullmatch(r"\s*(\d+)\.(\d+)(?:\.\d+)?\s*", text)
    if not m:
        raise ValueError(f"not a CUDA version: {text!r}")
    return int(m.group(1)), int(m.group(2))


def driver_version_from_int(value: int) -> tuple[int, int] | None:
    """The CUDA version a driver supports from ``cuDriverGetVersion``'s integer (12040 -> (12, 4));
    None for 0 (no driver)."""
    if value <= 0:
        return None
    return value // 1000, (value % 1000) // 10


def driver_mismatch(torch_version: str, torch_cuda: str, driver: tuple[int, int] | None) -> str | None:
    """One line saying why torch ``torch_version`` (built for CUDA ``torch_cuda``) cannot run on a
    driver supporting CUDA ``driver`` (None: no NVIDIA driver found), and the fix; None when it can."""
    need = parse_cuda_version(torch_cuda)
    branch = FIRST_DRIVER.get(need[0], f"one for CUDA {need[0]}")
    if driver is None:
        return (
            f"torch {torch_version} is built for CUDA {torch_cuda}, but no NVIDIA driver was found: install an "
            f"NVIDIA driver for CUDA {need[0]} ({branch} or newer), or run vLLM on the CPU (.venv-vllm, "
            "config/vllm-cpu.yaml; docs/models.md, GPU driver)"
        )
    if driver[0] >= need[0]:
        return None
    return (
        f"torch {torch_version} is built for CUDA {torch_cuda}, but this machine's NVIDIA driver supports CUDA up "
        f"to {driver[0]}.{driver[1]}: install an NVIDIA driver for CUDA {need[0]} ({branch} or newer), or build the "
        f"vLLM env for CUDA {driver[0]}.x as docs/models.md (GPU driver) describes"
    )


def check_cuda_driver() -> None:
    """Raise :class:`CudaDriverError` when this process's torch is a CUDA build the driver cannot run;
    nothing on a CPU build of torch or where torch does not import (vLLM says so itself)."""
    try:
        import torch
    except ImportError:
        return
    torch_cuda = getattr(torch.version, "cuda", None)
    if not torch_cuda:
        return
    getter = getattr(torch._C, "_cuda_getDriverVersion", None)
    if getter is None:
        return
    try:
        driver = driver_version_from_int(int(getter()))
    except RuntimeError:
        driver = None
    problem = driver_mismatch(torch.__version__, torch_cuda, driver)
    if problem:
        raise CudaDriverError(problem)
