"""Load llama.cpp's CPU backend for this CPU, and say which build a run used.

The project's llama-cpp-python wheel (``thinkbias.build.llamacpp_wheel``) ships one CPU backend per
x86-64 instruction-set level as ``llama_cpp/lib/libggml-cpu-<variant>.so``. llama.cpp would look for
them beside the Python executable; ``load_cpu_backends`` points it at the wheel's own folder, where
ggml scores every variant against the CPU's features and loads the best one it can run. Call it before
the first ``llama_cpp.Llama``. A wheel built without dynamic backends (a user's own CUDA build, say)
registers its backends statically, and then this is a no-op. The CUDA wheel (``envs/llamacpp-cuda.yaml``)
ships ``libggml-cuda.so`` beside the CPU variants, loaded the same way; ``require_gpu_offload`` stops
a model that asks for a GPU before it loads when no backend found one.
"""

from __future__ import annotations

import ctypes
import os
import platform
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from thinkbias.llm.gpu_offload import Backend, Device, asks_for_gpu, check_gpu_offload

if TYPE_CHECKING:
    from thinkbias.llm.types import ModelSpec

_LOCK = threading.Lock()
_LOADED = False


def _libggml():
    """The libggml that libllama itself loaded: the wheel ships ``libggml.so`` and ``libggml.so.0`` as
    two copies, and each copy keeps its own backend registry, so the one libllama links (by soname)
    must be the one the backends are registered in."""
    import llama_cpp.llama_cpp  # noqa: F401 (loads libllama and, through it, libggml)

    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        maps = ""
    linked = sorted(set(re.findall(r"(/\S*/libggml\.so[.0-9]*)$", maps, flags=re.M)))
    if linked:
        lib = ctypes.CDLL(linked[-1])  # the same path: dlopen hands back the handle already loaded
    else:
        import llama_cpp._ggml as ggml

        lib = ggml.libggml
    lib.ggml_backend_reg_count.restype = ctypes.c_size_t
    lib.ggml_backend_reg_count.argtypes = []
    return lib


def library_dir() -> Path:
    """The folder of the installed llama-cpp-python's shared libraries (and CPU backend variants)."""
    import llama_cpp

    return Path(llama_cpp.__file__).resolve().parent / "lib"


def cpu_variants() -> list[str]:
    """The CPU backend variants the installed wheel ships (empty for a statically linked build)."""
    return sorted(p.name[len("libggml-cpu-") : -len(".so")] for p in library_dir().glob("libggml-cpu-*.so"))


GPU_BACKENDS = ("cuda", "hip", "musa", "sycl", "vulkan", "opencl", "metal", "cann")


def gpu_backends_shipped() -> list[str]:
    """The GPU backends the installed wheel ships as libraries (``cuda`` for ``libggml-cuda.so``;
    none in the CPU wheel)."""
    return [name for name in GPU_BACKENDS if (library_dir() / f"libggml-{name}.so").exists()]


VARIANT_ENV = "THINKBIAS_LLAMACPP_CPU_VARIANT"


BEST = "best"
_CHOSEN = ""


def load_cpu_backends(variant: str = "") -> None:
    """Register a CPU backend variant (and any other dynamic backend) the wheel ships, once per process.

    ``variant`` (a registry entry's ``extra.cpu_variant``, e.g. ``haswell``) loads that variant, so
    machines with different CPUs run the same kernels (docs/engine.md, determinism policy);
    ``$THINKBIAS_LLAMACPP_CPU_VARIANT`` overrides it (``best``: the best variant this CPU runs, the
    default). A variant the wheel lacks or this CPU cannot run is refused, naming it, and so is a
    second model of the process asking for another variant than the one loaded; without a variant,
    a later call keeps what is loaded."""
    global _LOADED, _CHOSEN
    wanted = os.environ.get(VARIANT_ENV, "").strip() or variant.strip() or BEST
    with _LOCK:
        if _LOADED:
            if variant.strip() and wanted != _CHOSEN:
                raise RuntimeError(
                    f"llama.cpp CPU variant '{wanted}' asked for, but this process already loaded '{_CHOSEN}' "
                    f"(one variant per process; set {VARIANT_ENV} to choose one for every model)"
                )
            return
        lib = _libggml()
        if wanted != BEST and lib.ggml_backend_reg_count() == 0:
            _load_variant(lib, wanted)
        elif lib.ggml_backend_reg_count() == 0:
            lib.ggml_backend_load_all_from_path.restype = None
            lib.ggml_backend_load_all_from_path.argtypes = [ctypes.c_char_p]
            lib.ggml_backend_load_all_from_path(os.fsencode(library_dir()))
            if lib.ggml_backend_reg_count() == 0:
                raise RuntimeError(
                    f"llama.cpp loaded no backend from {library_dir()} (variants found: "
                    f"{', '.join(cpu_variants()) or 'none'}); reinstall llama-cpp-python with `python3 tb.py setup`"
                )
        _LOADED, _CHOSEN = True, wanted


def _load_variant(lib, variant: str) -> None:
    path = library_dir() / f"libggml-cpu-{variant}.so"
    if not path.exists():
        raise RuntimeError(
            f"llama.cpp CPU variant '{variant}': the installed llama-cpp-python has no such variant "
            f"(it has: {', '.join(cpu_variants()) or 'none, a statically linked build'})"
        )
    lib.ggml_backend_load.restype = ctypes.c_void_p
    lib.ggml_backend_load.argtypes = [ctypes.c_char_p]
    if not lib.ggml_backend_load(os.fsencode(path)):
        raise RuntimeError(
            f"llama.cpp CPU variant '{variant}': llama.cpp refused {path}: this CPU lacks an instruction set it "
            f"needs; set {VARIANT_ENV}={BEST} to run the best variant this CPU supports"
        )
    for name in gpu_backends_shipped():
        # one that does not load (no driver) is left out; require_gpu_offload names it to a model that needs it
        lib.ggml_backend_load(os.fsencode(library_dir() / f"libggml-{name}.so"))


# enum ggml_backend_dev_type (ggml-backend.h), in order
DEVICE_KINDS = ("CPU", "GPU", "IGPU", "ACCEL", "META")


def _bind(lib, name: str, restype, argtypes: list):
    fn = getattr(lib, name)
    fn.restype, fn.argtypes = restype, argtypes
    return fn


def loaded_backends() -> list[Backend]:
    """The backends registered in ggml (``CPU``, ``CUDA`` ...) with the devices each found, as
    ggml's backend registry lists them; loads the backends first if nothing has."""
    load_cpu_backends()
    lib = _libggml()
    ptr, size, text = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p
    reg_get = _bind(lib, "ggml_backend_reg_get", ptr, [size])
    reg_name = _bind(lib, "ggml_backend_reg_name", text, [ptr])
    reg_dev_count = _bind(lib, "ggml_backend_reg_dev_count", size, [ptr])
    reg_dev_get = _bind(lib, "ggml_backend_reg_dev_get", ptr, [ptr, size])
    dev_name = _bind(lib, "ggml_backend_dev_name", text, [ptr])
    dev_type = _bind(lib, "ggml_backend_dev_type", ctypes.c_int, [ptr])
    backends = []
    for i in range(lib.ggml_backend_reg_count()):
        reg = reg_get(i)
        devices = []
        for j in range(reg_dev_count(reg)):
            dev = reg_dev_get(reg, j)
            kind = dev_type(dev)
            name = (dev_name(dev) or b"").decode("utf-8", errors="replace")
            devices.append(Device(name, DEVICE_KINDS[kind] if 0 <= kind < len(DEVICE_KINDS) else str(kind)))
        backends.append(Backend((reg_name(reg) or b"").decode("utf-8", errors="replace"), tuple(devices)))
    return backends


def require_gpu_offload(spec: ModelSpec) -> None:
    """Stop a model whose entry asks for a GPU (``gpus`` >= 1 or a nonzero ``extra.n_gpu_layers``)
    before it loads, when this llama.cpp has no GPU device to offload to
    (``thinkbias.llm.gpu_offload.check_gpu_offload``); a CPU entry passes without a look, and so does
    one with ``extra.cpu_fallback`` (a stand-in GPU in a cluster test)."""
    if not asks_for_gpu(spec.gpus, spec.extra) or spec.extra.get("cpu_fallback"):
        return
    import llama_cpp

    backends = loaded_backends()
    supports = bool(llama_cpp.llama_supports_gpu_offload())
    check_gpu_offload(spec.id, spec.gpus, spec.extra, backends, supports, gpu_backends_shipped())


def system_info() -> str:
    """``llama_print_system_info()``: the instruction sets the loaded CPU backend was compiled for."""
    import llama_cpp

    load_cpu_backends()
    return llama_cpp.llama_print_system_info().decode("utf-8", errors="replace").strip()


def compiled_features(info: str | None = None) -> list[str]:
    """The features ``system_info`` reports as on (``AVX512 = 1`` -> ``AVX512``)."""
    return re.findall(r"([A-Z0-9_]+) = 1", system_info() if info is None else info)


def loaded_variant() -> str:
    """The CPU variant ggml chose: the loaded ``libggml-cpu-*.so`` of this process, or ``static``."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return "unknown"
    found = sorted(set(re.findall(r"libggml-cpu-([A-Za-z0-9_.]+)\.so", maps)))
    return ",".join(found) if found else "static"


def build_info(n_threads: int | None = None) -> dict:
    """The engine build a run used: backend version, CPU variant and its features, threads, machine."""
    import llama_cpp

    load_cpu_backends()
    info = system_info()
    out = {
        "backend": "llama.cpp",
        "version": f"(llama-cpp-python {llama_cpp.__version__})",
        "cpu_variant": loaded_variant(),
        "machine": platform.machine(),
    }
    if n_threads is not None:
        out["threads"] = int(n_threads)
    out["cpu_features"] = compiled_features(info)
    return out
