"""The llama.cpp build: keyed by its configuration, AMX left out, and a CPU that cannot run it stopped
at setup with a message that says why."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO
from thinkbias.build import llamacpp_wheel

# ggml's feature names (llama_print_system_info) -> the /proc/cpuinfo flag each needs
FEATURE_FLAGS = {
    "SSE3": "pni", "SSSE3": "ssse3", "AVX": "avx", "AVX2": "avx2", "F16C": "f16c", "FMA": "fma",
    "BMI2": "bmi2", "AVX_VNNI": "avx_vnni", "AVX512": "avx512f", "AVX512_VBMI": "avx512vbmi",
    "AVX512_VNNI": "avx512_vnni", "AVX512_BF16": "avx512_bf16", "AMX_INT8": "amx_int8",
}  # fmt: skip


def test_the_cache_key_follows_the_build_configuration(monkeypatch, tmp_path):
    key = llamacpp_wheel.build_key()
    assert llamacpp_wheel.wheel_dir(tmp_path).name.endswith(key)
    monkeypatch.setattr(llamacpp_wheel, "CMAKE_ARGS", ("-DGGML_NATIVE=ON",))
    assert llamacpp_wheel.build_key() != key  # a native build never shares a folder with this one
    # a wheel left in the cache's top folder (how earlier setups stored it) is never found
    (tmp_path / "llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl").write_bytes(b"old native wheel")
    assert llamacpp_wheel.cached_wheel(tmp_path) is None


NVCC_12_6 = "Cuda compilation tools, release 12.6, V12.6.85"


def test_the_cuda_build_adds_the_cuda_backend_and_never_shares_the_cpu_wheels_folder(monkeypatch, tmp_path):
    monkeypatch.delenv(llamacpp_wheel.CUDA_ARCHITECTURES_ENV, raising=False)
    monkeypatch.setattr(llamacpp_wheel, "cuda_toolkit", lambda: NVCC_12_6)
    cpu, cuda = llamacpp_wheel.cmake_args(), llamacpp_wheel.cmake_args(cuda=True)
    assert cpu == list(llamacpp_wheel.CMAKE_ARGS) and not [a for a in cpu if "CUDA" in a]
    assert cuda == cpu + ["-DGGML_CUDA=ON", "-DCMAKE_CUDA_ARCHITECTURES=80;86;89;90"]  # the same dispatch, plus CUDA
    cpu_key, cuda_key = llamacpp_wheel.build_key(), llamacpp_wheel.build_key(cuda=True)
    assert cpu_key != cuda_key
    assert llamacpp_wheel.wheel_dir(tmp_path).name == f"llama-cpp-python-0.3.36-dispatch-{cpu_key}"
    assert llamacpp_wheel.wheel_dir(tmp_path, cuda=True).name == f"llama-cpp-python-0.3.36-dispatch-cuda-{cuda_key}"
    cpu_wheel = llamacpp_wheel.wheel_dir(tmp_path) / "llama_cpp_python-0.3.36-cp311-cp311-linux_x86_64.whl"
    cpu_wheel.parent.mkdir(parents=True)
    cpu_wheel.write_bytes(b"CPU wheel")
    assert llamacpp_wheel.cached_wheel(tmp_path) == cpu_wheel
    assert llamacpp_wheel.cached_wheel(tmp_path, cuda=True) is None  # never installed in the CUDA env
    # the architectures and the toolkit are part of the CUDA key, and of no CPU key
    monkeypatch.setenv(llamacpp_wheel.CUDA_ARCHITECTURES_ENV, "90")
    assert llamacpp_wheel.cmake_args(cuda=True)[-1] == "-DCMAKE_CUDA_ARCHITECTURES=90"
    assert llamacpp_wheel.build_key(cuda=True) != cuda_key and llamacpp_wheel.build_key() == cpu_key
    monkeypatch.delenv(llamacpp_wheel.CUDA_ARCHITECTURES_ENV)
    monkeypatch.setattr(llamacpp_wheel, "cuda_toolkit", lambda: "Cuda compilation tools, release 12.8, V12.8.93")
    assert llamacpp_wheel.build_key(cuda=True) != cuda_key and llamacpp_wheel.build_key() == cpu_key


def test_the_cli_prints_either_key_and_refuses_a_cuda_build_without_nvcc(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(llamacpp_wheel, "cuda_toolkit", lambda: NVCC_12_6)
    assert llamacpp_wheel.main(["key"]) == 0 and llamacpp_wheel.main(["key", "--cuda"]) == 0
    assert capsys.readouterr().out.split() == [llamacpp_wheel.build_key(), llamacpp_wheel.build_key(cuda=True)]
    assert llamacpp_wheel.main(["install", "--cuda", "a", "b"]) == 2 and llamacpp_wheel.main(["build"]) == 2
    monkeypatch.setattr(llamacpp_wheel, "cuda_toolkit", lambda: "")
    monkeypatch.setattr(llamacpp_wheel, "_sh", lambda *a, **kw: pytest.fail("ran a command"))
    with pytest.raises(SystemExit, match="needs nvcc"):
        llamacpp_wheel.main(["install", "--cuda", str(tmp_path)])


def test_the_amx_variant_is_removed_exactly_once(tmp_path):
    variants = tmp_path / llamacpp_wheel.VARIANTS_FILE
    variants.parent.mkdir(parents=True)
    other = "        ggml_add_cpu_backend_variant(zen4           SSE42 AVX F16C FMA AVX2 BMI2 AVX512)\n"
    variants.write_text(other + "            " + llamacpp_wheel.AMX_VARIANT + "\n")
    llamacpp_wheel.remove_amx_variant(tmp_path)
    text = variants.read_text()
    assert "AMX_INT8" not in text and other in text
    with pytest.raises(SystemExit, match="expected the AMX variant line exactly once"):
        llamacpp_wheel.remove_amx_variant(tmp_path)  # the sources changed: refuse rather than build AMX


def test_a_smoke_killed_by_a_signal_stops_setup_naming_wheel_flags_and_fix(tmp_path):
    python = tmp_path / "python"
    python.write_text("#!/bin/sh\nkill -ILL $$\n")  # dies as a CPU without the instruction would
    python.chmod(python.stat().st_mode | stat.S_IEXEC)
    wheel = tmp_path / "wheels" / "llama_cpp_python-0.3.36-py3-none-linux_x86_64.whl"
    with pytest.raises(SystemExit) as err:
        llamacpp_wheel.smoke(python, tmp_path / "model.gguf", wheel)
    message = str(err.value)
    assert "died with SIGILL" in message and str(wheel) in message and str(wheel.parent) in message
    assert "CPU flags:" in message and "run setup again" in message
    if llamacpp_wheel.relevant_cpu_flags():
        assert " ".join(llamacpp_wheel.relevant_cpu_flags()) in message


@pytest.mark.slow
def test_the_installed_build_prefills_and_uses_no_instruction_the_cpu_lacks(embedded_model):
    """The smoke prefill of setup, on the installed wheel: it runs, loads a CPU variant (not AMX) and
    its features are all ones this CPU reports."""
    from thinkbias.llm.llamacpp_backends import cpu_variants

    build = json.loads(llamacpp_wheel.smoke(Path(sys.executable), embedded_model))
    flags = llamacpp_wheel.cpu_flags()
    lacking = [f for f in build["cpu_features"] if f in FEATURE_FLAGS and FEATURE_FLAGS[f] not in flags]
    assert lacking == [], f"the build uses {lacking}, which this CPU does not report"
    assert "AMX_INT8" not in build["cpu_features"]
    assert build["cpu_variant"] not in ("static", "unknown", "sapphirerapids")
    assert "sapphirerapids" not in cpu_variants() and "x64" in cpu_variants()
    if "avx512f" in flags:
        assert "AVX512" in build["cpu_features"]  # the dispatch picked the best variant, not the baseline


@pytest.mark.parametrize("env, install", [("llamacpp", "install "), ("llamacpp-cuda", "install --cuda ")])
def test_the_conda_env_builds_the_same_wheel(env, install):
    import yaml

    deps = yaml.safe_load((REPO / f"envs/{env}.yaml").read_text())["dependencies"]
    pip = next(d["pip"] for d in deps if isinstance(d, dict))
    assert not [p for p in pip if p.startswith("llama-cpp-python")]  # a pip pin would build a native wheel
    deploy = REPO / f"envs/{env}.post-deploy.sh"
    assert f"python -m thinkbias.build.llamacpp_wheel {install}" in deploy.read_text()
    assert deploy.stat().st_mode & stat.S_IXUSR


def test_the_cuda_env_is_the_cpu_env_plus_one_cuda_12_toolkit():
    import yaml

    def deps(env: str) -> list:
        return yaml.safe_load((REPO / f"envs/{env}.yaml").read_text())["dependencies"]

    cpu, cuda = deps("llamacpp"), deps("llamacpp-cuda")
    added = [d for d in cuda if d not in cpu]
    assert [d for d in cpu if d not in cuda] == []  # the same engine libraries, at the same versions
    names = {d.split("=")[0]: d.split("=")[1] for d in added}
    assert set(names) >= {"cuda-version", "cuda-nvcc", "cuda-cudart-dev", "libcublas-dev", "cuda-driver-dev"}
    assert names["cuda-version"] == "12.6"
    assert {name: v for name, v in names.items() if not v.startswith("12.6.")} == {"cuda-version": "12.6"}


PINNED = """
from thinkbias.llm.llamacpp_backends import build_info, load_cpu_backends
import json, sys
load_cpu_backends()
from llama_cpp import Llama
Llama(sys.argv[1], n_ctx=256, verbose=False)
print(json.dumps(build_info(1)))
"""


@pytest.mark.slow
def test_a_pinned_variant_loads_instead_of_the_best_and_a_missing_one_is_named(embedded_model):
    import os
    import subprocess

    def run(variant: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "THINKBIAS_LLAMACPP_CPU_VARIANT": variant, "PYTHONPATH": str(REPO)}
        args = [sys.executable, "-c", PINNED, str(embedded_model)]
        return subprocess.run(args, env=env, capture_output=True, text=True)

    pinned = run("haswell")
    assert pinned.returncode == 0, pinned.stderr[-2000:]
    build = json.loads(pinned.stdout.strip().splitlines()[-1])
    assert build["cpu_variant"] == "haswell" and "AVX2" in build["cpu_features"]
    assert "AVX512" not in build["cpu_features"]
    missing = run("no-such-variant")
    assert missing.returncode != 0
    assert "CPU variant 'no-such-variant'" in missing.stderr and "haswell" in missing.stderr


CONFLICT = """
from thinkbias.llm.llamacpp_backends import load_cpu_backends, loaded_variant
load_cpu_backends("haswell")
load_cpu_backends()  # no variant asked: keeps what is loaded
print(loaded_variant())
load_cpu_backends("zen4")
"""


@pytest.mark.slow
def test_a_registry_variant_loads_once_per_process_and_another_is_refused():
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "THINKBIAS_LLAMACPP_CPU_VARIANT"}
    done = subprocess.run(
        [sys.executable, "-c", CONFLICT], env={**env, "PYTHONPATH": str(REPO)}, capture_output=True, text=True
    )
    assert done.returncode != 0 and done.stdout.strip().splitlines()[-1] == "haswell"
    assert "'zen4' asked for, but this process already loaded 'haswell'" in done.stderr
