"""Load llama.cpp's CPU backend for this CPU, and say which build a run used.

The project's llama-cpp-python wheel (``thinkbias.build.llamacpp_wheel``) ships one CPU backend per
x86-64 instruction-set level as ``llama_cpp/lib/libggml-cpu-<variant>.so``. llama.cpp would look for
them beside the Python executable; ``load_cpu_backends`` points it at the wheel's own folder, where
ggml scores every variant against the CPU's features and loads the best one it can run. Call it before
the first ``llama_cpp.Llama``. A wheel built without dynamic backends (a user's CUDA build, say)
registers its backends statically, and then this is a no-op.
"""

from __future__ import annotations

import ctypes
import os
import platform
import re
import threading
from pathlib import Path

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
