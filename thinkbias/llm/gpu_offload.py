"""llama.cpp models that ask for a GPU: the conda env their jobs run in, and the refusal to load one
where llama.cpp has no GPU to offload to.

A llama.cpp without a GPU backend ignores ``n_gpu_layers`` and runs the whole model on the CPU, without
a word, while the job holds a GPU slot: a study sized for a GPU would take weeks. So a llama.cpp entry
that asks for a GPU (``gpus`` >= 1 or a nonzero ``extra.n_gpu_layers``) runs in
``envs/llamacpp-cuda.yaml``, whose llama-cpp-python has the CUDA backend beside the CPU ones, and the
engine refuses to load it when llama.cpp reports no GPU device (``check_gpu_offload``, called by
``thinkbias.llm.llamacpp_backends.require_gpu_offload`` with what the loaded llama.cpp reports).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

GPU_ENV = "llamacpp-cuda"
# ggml's device types that hold offloaded layers (GGML_BACKEND_DEVICE_TYPE_GPU, _IGPU)
GPU_KINDS = ("GPU", "IGPU")


@dataclass(frozen=True)
class Device:
    """One device of a loaded ggml backend: its name (``CPU``, ``CUDA0``) and ggml's type of it (``CPU``,
    ``GPU``, ``IGPU``, ``ACCEL`` or ``META``)."""

    name: str
    kind: str


@dataclass(frozen=True)
class Backend:
    """One backend registered in ggml (``CPU``, ``CUDA``) and the devices it found."""

    name: str
    devices: tuple[Device, ...] = ()


class GpuOffloadUnavailable(RuntimeError):
    """A model asks for a GPU and the loaded llama.cpp has no GPU device to offload to."""


def n_gpu_layers(extra: Mapping | None) -> int:
    """The entry's ``extra.n_gpu_layers`` (0 when unset: CPU only; -1: every layer)."""
    return int((extra or {}).get("n_gpu_layers") or 0)


def asks_for_gpu(gpus: int | None, extra: Mapping | None) -> bool:
    """Whether a llama.cpp entry asks for a GPU: ``gpus`` >= 1 or a nonzero ``extra.n_gpu_layers``."""
    return int(gpus or 0) >= 1 or n_gpu_layers(extra) != 0


def conda_env(entry: Mapping) -> str:
    """The conda env (a file stem of ``envs/``) of a job running the registry ``entry``: its backend's,
    and ``llamacpp-cuda`` for a llama.cpp entry that asks for a GPU."""
    backend = entry["backend"]
    if backend == "llamacpp" and asks_for_gpu(entry.get("gpus"), entry.get("extra")):
        return GPU_ENV
    return backend


def gpu_devices(backends: Sequence[Backend]) -> list[Device]:
    """The devices of ``backends`` that can hold offloaded layers."""
    return [d for b in backends for d in b.devices if d.kind in GPU_KINDS]


def describe_backends(backends: Sequence[Backend]) -> str:
    """``CPU (devices: CPU), CUDA (no device)``: the backends and their devices, for a message."""
    parts = []
    for b in backends:
        devices = f"devices: {', '.join(d.name for d in b.devices)}" if b.devices else "no device"
        parts.append(f"{b.name} ({devices})")
    return ", ".join(parts) or "none"


def check_gpu_offload(
    model_id: str,
    gpus: int,
    extra: Mapping | None,
    backends: Sequence[Backend],
    supports_offload: bool,
    shipped: Sequence[str] = (),
) -> None:
    """Raise ``GpuOffloadUnavailable`` when the entry asks for a GPU (``asks_for_gpu``) and llama.cpp
    cannot give it one: ``supports_offload`` (``llama_supports_gpu_offload()``) is false or no loaded
    ``backends`` has a GPU device. ``shipped``: the GPU backends the installed wheel ships (``cuda``
    for ``libggml-cuda.so``), to tell a CPU-only build from a CUDA backend that did not load. The
    message names the model, what it asks for, the loaded backends and both ways out."""
    if not asks_for_gpu(gpus, extra) or (supports_offload and gpu_devices(backends)):
        return
    names = {b.name.lower() for b in backends}
    idle = [b.name for b in backends if not b.devices]
    unloaded = [s for s in shipped if s.lower() not in names]
    if idle:
        why = f"its GPU backend ({', '.join(idle)}) found no GPU device (no GPU visible to this job?)"
    elif unloaded:
        why = (
            f"the wheel's {', '.join(unloaded)} backend did not load (no NVIDIA driver, libcuda.so.1, or no CUDA "
            "libraries on this machine?)"
        )
    else:
        why = "this llama-cpp-python has no GPU backend (a CPU-only build)"
    raise GpuOffloadUnavailable(
        f"model '{model_id}' asks for a GPU (gpus: {int(gpus or 0)}, extra.n_gpu_layers: {n_gpu_layers(extra)}), "
        f"but llama.cpp cannot offload to one here: {why}; backends loaded: {describe_backends(backends)}. "
        "Loading it would run every layer on the CPU. Run it in the conda env "
        f"envs/{GPU_ENV}.yaml (the workflow's rules do for such an entry; its llama-cpp-python is built with "
        "CUDA, `python -m thinkbias.build.llamacpp_wheel install --cuda`) on a machine with an NVIDIA GPU, "
        "or set gpus: 0 and extra.n_gpu_layers: 0 in its registry entry to run it on the CPU."
    )
