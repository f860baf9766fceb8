"""Build llama-cpp-python so that it runs on any x86-64 CPU it lands on, and prove it does.

The wheel is built with runtime dispatch (``GGML_BACKEND_DL``, ``GGML_CPU_ALL_VARIANTS``,
``GGML_NATIVE=OFF``): llama.cpp compiles one CPU backend per instruction-set level and loads, at
run time, the best one the CPU reports (``thinkbias.llm.llamacpp_backends``). The Sapphire Rapids
variant is left out: its AMX kernels died with SIGILL on Xeons whose hypervisor reports AMX but
does not enable it, so an AMX CPU runs the AVX-512 (zen4-level) variant instead.

The CUDA build (``install --cuda``, run in ``envs/llamacpp-cuda.yaml``) adds ``GGML_CUDA``: the CUDA
backend is one more dynamically loaded backend beside the same CPU variants, compiled for the GPU
architectures of ``$THINKBIAS_CUDA_ARCHITECTURES`` (default ``CUDA_ARCHITECTURES``).

Standard library only: ``tb.py`` imports it with the system Python, and the conda env's
post-deploy script runs it as ``python -m thinkbias.build.llamacpp_wheel install``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

VERSION = "0.3.36"
SDIST = f"llama_cpp_python-{VERSION}.tar.gz"
SDIST_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
CMAKE_ARGS = (
    "-DGGML_NATIVE=OFF",
    "-DGGML_BACKEND_DL=ON",
    "-DGGML_CPU_ALL_VARIANTS=ON",
    # a STRING (not a PATH, which CMake makes absolute against the build folder): relative to the install
    # prefix, so the variants land beside libllama.so in the wheel
    "-DGGML_BACKEND_DIR:STRING=llama_cpp/lib",
    "-DLLAVA_BUILD=OFF",
)
VARIANTS_FILE = "vendor/llama.cpp/ggml/src/CMakeLists.txt"
# The one variant that enables AMX (AMX_TILE AMX_INT8); removed from the build, line and all.
AMX_VARIANT = (
    "ggml_add_cpu_backend_variant(sapphirerapids SSE42 AVX F16C FMA AVX2 BMI2 AVX512 AVX512_VBMI "
    "AVX512_VNNI AVX512_BF16 AMX_TILE AMX_INT8)"
)
# CPU flags (as /proc/cpuinfo spells them) that decide which variant loads; named when a smoke fails.
RELEVANT_FLAGS = (
    "sse4_2", "avx", "f16c", "fma", "bmi2", "avx2", "avx_vnni", "avx512f", "avx512bw", "avx512vl",
    "avx512_vnni", "avx512vbmi", "avx512_bf16", "amx_tile", "amx_int8", "amx_bf16",
)  # fmt: skip
CUDA_ARCHITECTURES_ENV = "THINKBIAS_CUDA_ARCHITECTURES"
# Ampere (A100, A10/RTX 30), Ada (L4, L40, RTX 40), Hopper (H100, H200)
CUDA_ARCHITECTURES = "80;86;89;90"
SMOKE_PROMPT_TOKENS = 160
SMOKE_THREADS = 2


def cuda_architectures() -> str:
    """The GPU architectures the CUDA backend is compiled for (``$THINKBIAS_CUDA_ARCHITECTURES``, e.g.
    ``90`` or ``80;90``, else ``CUDA_ARCHITECTURES``)."""
    return os.environ.get(CUDA_ARCHITECTURES_ENV, "").strip() or CUDA_ARCHITECTURES


def cmake_args(cuda: bool = False) -> list[str]:
    """The CMake arguments of the build: runtime dispatch, and with ``cuda`` the CUDA backend."""
    extra = ["-DGGML_CUDA=ON", f"-DCMAKE_CUDA_ARCHITECTURES={cuda_architectures()}"] if cuda else []
    return list(CMAKE_ARGS) + extra


def cuda_toolkit() -> str:
    """The CUDA compiler's release line (``Cuda compilation tools, release 12.6, V12.6.85``), or ""
    where ``nvcc`` is not found (``$CUDACXX``, else the PATH)."""
    nvcc = os.environ.get("CUDACXX") or shutil.which("nvcc")
    if not nvcc:
        return ""
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return ""
    return next((line.strip() for line in out.splitlines() if "release" in line), out.strip())


def build_config(cuda: bool = False) -> dict:
    """Everything that decides the wheel's bytes; its hash keys the wheel cache. The CUDA wheel's also
    names the CUDA toolkit and the environment it was built in: its CUDA backend finds the toolkit's
    libraries through an absolute RPATH into that environment."""
    config = {
        "version": VERSION,
        "sdist_sha256": SDIST_SHA256,
        "cmake_args": cmake_args(cuda),
        "removed_variants": [AMX_VARIANT],
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "platform": sys.platform,
        "machine": os.uname().machine,
    }
    if cuda:
        config.update(cuda_toolkit=cuda_toolkit(), prefix=sys.prefix)
    return config


def build_key(cuda: bool = False) -> str:
    """A short hash of ``build_config()``: a wheel built any other way lives under another key."""
    blob = json.dumps(build_config(cuda), sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def wheel_dir(cache: Path, cuda: bool = False) -> Path:
    """The cache folder of this build configuration's wheel."""
    flavour = "dispatch-cuda" if cuda else "dispatch"
    return Path(cache) / f"llama-cpp-python-{VERSION}-{flavour}-{build_key(cuda)}"


def cached_wheel(cache: Path, cuda: bool = False) -> Path | None:
    """The wheel of this build configuration, if one was built."""
    found = sorted(wheel_dir(cache, cuda).glob(f"llama_cpp_python-{VERSION}-*.whl"))
    return found[0] if found else None


def cpu_flags() -> set[str]:
    """The instruction-set flags the kernel reports for this CPU (empty where /proc/cpuinfo is absent)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def relevant_cpu_flags() -> list[str]:
    """The flags of ``RELEVANT_FLAGS`` this CPU has, in that order."""
    have = cpu_flags()
    return [f for f in RELEVANT_FLAGS if f in have]


def _sh(cmd: list, **kw) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    subprocess.run([str(c) for c in cmd], check=True, **kw)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def remove_amx_variant(source_dir: Path) -> None:
    """Drop the AMX variant from the sdist's variant list; fails if the list is not the one expected."""
    path = source_dir / VARIANTS_FILE
    text = path.read_text()
    if text.count(AMX_VARIANT) != 1:
        raise SystemExit(
            f"{path}: expected the AMX variant line exactly once ({AMX_VARIANT!r}); "
            f"the llama-cpp-python {VERSION} sources differ from the ones this build was written for"
        )
    path.write_text(text.replace(AMX_VARIANT, "# AMX variant removed by thinkbias (SIGILL where AMX is not enabled)"))


def build_wheel(python: Path, cache: Path, cuda: bool = False) -> Path:
    """Download the pinned sdist, check its sha256, remove the AMX variant and build the wheel (with
    the CUDA backend too when ``cuda``)."""
    if cuda and not cuda_toolkit():
        raise SystemExit("building llama-cpp-python with CUDA needs nvcc (set CUDACXX or put it on the PATH)")
    out = wheel_dir(cache, cuda)
    with tempfile.TemporaryDirectory(prefix="thinkbias-llamacpp-") as tmp:
        tmp = Path(tmp)
        _sh([python, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", ":all:",
             "--dest", tmp, f"llama-cpp-python=={VERSION}"])  # fmt: skip
        sdist = tmp / SDIST
        actual = _sha256(sdist)
        if actual != SDIST_SHA256:
            raise SystemExit(f"{sdist.name}: sha256 {actual}, expected {SDIST_SHA256}; not building it")
        with tarfile.open(sdist) as tar:
            tar.extractall(tmp, filter="data")
        source = tmp / f"llama_cpp_python-{VERSION}"
        remove_amx_variant(source)
        env = {
            **os.environ,
            "CMAKE_ARGS": " ".join(cmake_args(cuda)),
            "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2),
        }
        built = tmp / "wheel"
        _sh([python, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", built, source], env=env)
        wheels = list(built.glob("llama_cpp_python-*.whl"))
        if len(wheels) != 1:
            raise SystemExit(f"building llama-cpp-python gave {len(wheels)} wheels in {built}, expected 1")
        out.mkdir(parents=True, exist_ok=True)
        (out / "build.json").write_text(json.dumps(build_config(cuda), indent=2, sort_keys=True) + "\n")
        partial = out / (wheels[0].name + ".part")
        shutil.copyfile(wheels[0], partial)
        partial.replace(out / wheels[0].name)  # atomic: a half-copied wheel is never found
    return out / wheels[0].name


def ensure_wheel(python: Path, cache: Path, cuda: bool = False) -> Path:
    """This configuration's wheel from the cache, built first if it is not there."""
    return cached_wheel(cache, cuda) or build_wheel(python, cache, cuda)


SMOKE_CODE = """
import json, sys
from thinkbias.llm.llamacpp_backends import load_cpu_backends, build_info
load_cpu_backends()
from llama_cpp import Llama
m = Llama(sys.argv[1], n_ctx=512, n_threads={threads}, n_batch=512, verbose=False)
ids = m.tokenize(("The quick brown fox jumps over the lazy dog. " * 40).encode())[:{tokens}]
assert len(ids) >= {tokens}, len(ids)
m.eval(ids)
print(json.dumps(build_info(n_threads={threads})))
"""


def smoke(python: Path, model: Path, wheel: Path | None = None) -> str:
    """Prefill ``SMOKE_PROMPT_TOKENS`` tokens with two threads in a subprocess; stop setup if it dies.

    Returns what the subprocess printed: the engine build it ran on, as JSON."""
    code = SMOKE_CODE.format(threads=SMOKE_THREADS, tokens=SMOKE_PROMPT_TOKENS)
    proc = subprocess.run([str(python), "-c", code, str(model)], capture_output=True, text=True)
    if proc.returncode < 0:
        import signal

        name = signal.Signals(-proc.returncode).name
        raise SystemExit(
            f"llama-cpp-python smoke test died with {name}: a {SMOKE_PROMPT_TOKENS}-token prefill with "
            f"{SMOKE_THREADS} threads on {model}.\n"
            f"  wheel: {wheel or 'the installed llama-cpp-python'}\n"
            f"  CPU flags: {' '.join(relevant_cpu_flags()) or '(none read from /proc/cpuinfo)'}\n"
            "  The wheel executes an instruction this CPU or its OS/hypervisor does not enable. Remove the "
            f"wheel's folder ({wheel.parent if wheel else 'the wheel cache'}) and run setup again on this "
            "machine; if it dies again, report the flags above."
        )
    if proc.returncode != 0:
        raise SystemExit(
            f"llama-cpp-python smoke test failed (exit {proc.returncode}) on {model}:\n{proc.stderr[-2000:]}"
        )
    return proc.stdout.strip()


def main(argv: list[str]) -> int:
    """``install [--cuda] [CACHE]``: build (or reuse) the wheel and install it into this Python;
    ``key [--cuda]``: print its cache key."""
    cuda = "--cuda" in argv
    args = [a for a in argv if a != "--cuda"]
    if not args or args[0] not in ("install", "key") or len(args) > 2 or (args[0] == "key" and len(args) > 1):
        print(
            "usage: python -m thinkbias.build.llamacpp_wheel install [--cuda] [CACHE] | key [--cuda]", file=sys.stderr
        )
        return 2
    if args[0] == "key":
        print(build_key(cuda))
        return 0
    cache = Path(args[1]) if len(args) > 1 else Path.home() / ".cache" / "thinkbias" / "wheels"
    wheel = ensure_wheel(Path(sys.executable), cache, cuda)
    _sh([sys.executable, "-m", "pip", "install", "--no-deps", "--force-reinstall", wheel])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
