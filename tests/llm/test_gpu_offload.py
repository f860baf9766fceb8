"""A llama.cpp model that asks for a GPU runs in the CUDA env, and where llama.cpp has no GPU it is
refused before it loads, with a message naming the model, what it asked for, the backends that loaded
and the ways out; a CPU entry is never checked. The refusal is checked on the embedded model with the
project's CPU-only build (here llama.cpp really has no GPU)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from thinkbias.llm.gpu_offload import (
    Backend,
    Device,
    GpuOffloadUnavailable,
    asks_for_gpu,
    check_gpu_offload,
    conda_env,
    gpu_devices,
)

CPU = Backend("CPU", (Device("CPU", "CPU"),))
CUDA = Backend("CUDA", (Device("CUDA0", "GPU"),))


def test_an_entry_asks_for_a_gpu_by_gpus_or_by_offloaded_layers():
    assert asks_for_gpu(1, {}) and asks_for_gpu(0, {"n_gpu_layers": -1}) and asks_for_gpu(0, {"n_gpu_layers": 20})
    assert asks_for_gpu(2, {"n_gpu_layers": 0})
    assert not asks_for_gpu(0, {"n_gpu_layers": 0}) and not asks_for_gpu(None, None) and not asks_for_gpu(0, {})


def test_gguf_jobs_that_ask_for_a_gpu_run_in_the_cuda_env_and_no_other_backend_changes():
    assert conda_env({"backend": "llamacpp", "gpus": 1, "extra": {"n_gpu_layers": -1}}) == "llamacpp-cuda"
    assert conda_env({"backend": "llamacpp", "gpus": 0, "extra": {"n_gpu_layers": 12}}) == "llamacpp-cuda"
    assert conda_env({"backend": "llamacpp", "gpus": 1}) == "llamacpp-cuda"
    assert conda_env({"backend": "llamacpp", "gpus": 0, "extra": {"cpu_variant": "haswell"}}) == "llamacpp"
    assert conda_env({"backend": "llamacpp", "extra": None}) == "llamacpp"
    assert conda_env({"backend": "vllm", "gpus": 1}) == "vllm" and conda_env({"backend": "vllm", "gpus": 0}) == "vllm"
    assert conda_env({"backend": "openai", "gpus": 1, "extra": {}}) == "openai"


def test_a_gpu_device_lets_the_model_load_and_a_cpu_entry_is_never_checked():
    check_gpu_offload("m", 1, {"n_gpu_layers": -1}, [CPU, CUDA], supports_offload=True, shipped=["cuda"])
    check_gpu_offload("m", 0, {"n_gpu_layers": 0}, [], supports_offload=False)
    check_gpu_offload("m", 0, {}, [CPU], supports_offload=False)
    assert gpu_devices([CPU, CUDA]) == [Device("CUDA0", "GPU")] and gpu_devices([CPU]) == []


def refusal(backends, shipped=(), gpus=1, extra=None, supports=False) -> str:
    extra = {"n_gpu_layers": -1} if extra is None else extra
    with pytest.raises(GpuOffloadUnavailable) as err:
        check_gpu_offload("r1-distill-qwen-7b-q4km", gpus, extra, backends, supports, shipped)
    return str(err.value)


def test_the_refusal_names_model_request_backends_cause_and_both_ways_out():
    message = refusal([CPU])
    assert message.startswith(
        "model 'r1-distill-qwen-7b-q4km' asks for a GPU (gpus: 1, extra.n_gpu_layers: -1), but llama.cpp cannot "
        "offload to one here: this llama-cpp-python has no GPU backend (a CPU-only build); "
        "backends loaded: CPU (devices: CPU)."
    )
    assert "envs/llamacpp-cuda.yaml" in message and "llamacpp_wheel install --cuda" in message
    assert "set gpus: 0 and extra.n_gpu_layers: 0 in its registry entry to run it on the CPU" in message
    assert "(gpus: 0, extra.n_gpu_layers: 8)" in refusal([CPU], gpus=0, extra={"n_gpu_layers": 8})
    assert "(gpus: 1, extra.n_gpu_layers: 0)" in refusal([CPU], extra={})


def test_the_refusal_tells_a_cuda_backend_that_did_not_load_from_one_that_found_no_gpu():
    unloaded = refusal([CPU], shipped=["cuda"])
    assert "the wheel's cuda backend did not load (no NVIDIA driver" in unloaded and "CPU-only" not in unloaded
    idle = refusal([CPU, Backend("CUDA")], shipped=["cuda"])
    assert "its GPU backend (CUDA) found no GPU device" in idle
    assert "backends loaded: CPU (devices: CPU), CUDA (no device)" in idle
    assert "llama.cpp cannot offload" in refusal([CPU, CUDA], shipped=["cuda"], supports=False)
    assert "backends loaded: none" in refusal([])


def cpu_only() -> None:
    from thinkbias.llm.llamacpp_backends import loaded_backends

    if gpu_devices(loaded_backends()):
        pytest.skip("this llama.cpp has a GPU: nothing to refuse")


def test_the_project_build_reports_its_cpu_backend_and_no_gpu(spec):
    import llama_cpp

    from thinkbias.llm.llamacpp_backends import gpu_backends_shipped, load_cpu_backends, loaded_backends

    load_cpu_backends(spec.extra.get("cpu_variant", ""))
    backends = loaded_backends()
    assert [b.name for b in backends] == ["CPU"] and [d.kind for d in backends[0].devices] == ["CPU"]
    assert gpu_backends_shipped() == [] and not llama_cpp.llama_supports_gpu_offload()


@pytest.fixture
def llama_calls(monkeypatch):
    """Every ``llama_cpp.Llama`` built while the test runs (each is built for real, as without the check)."""
    import llama_cpp

    calls, real = [], llama_cpp.Llama

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(llama_cpp, "Llama", spy)
    return calls


@pytest.mark.parametrize(
    "gpus, layers", [(1, -1), (0, -1), (1, 0)], ids=["gpus-and-layers", "layers-only", "gpus-only"]
)
def test_the_engine_refuses_a_gguf_model_asking_for_a_gpu_before_it_loads(spec, llama_calls, gpus, layers):
    from thinkbias.llm.llamacpp import LlamaCppEngine

    cpu_only()
    gpu_spec = replace(spec, gpus=gpus, extra={**spec.extra, "n_gpu_layers": layers})
    with pytest.raises(GpuOffloadUnavailable) as err:
        LlamaCppEngine(gpu_spec, None, n_threads=1).close()
    message = str(err.value)
    assert f"model 'smollm2-135m' asks for a GPU (gpus: {gpus}, extra.n_gpu_layers: {layers})" in message
    assert "backends loaded: CPU (devices: CPU)" in message and "envs/llamacpp-cuda.yaml" in message
    assert "set gpus: 0 and extra.n_gpu_layers: 0" in message
    assert llama_calls == []  # stopped before any model was loaded (on the CPU)


def test_the_embedder_refuses_it_too_and_the_cpu_entry_still_loads(spec, llama_calls):
    from thinkbias.llm import open_engine
    from thinkbias.llm.embeddings import embed_texts

    cpu_only()
    gpu_spec = replace(spec, gpus=1, extra={**spec.extra, "n_gpu_layers": -1})
    with pytest.raises(GpuOffloadUnavailable, match="model 'smollm2-135m' asks for a GPU"):
        embed_texts(gpu_spec, ["a short text"], None, n_threads=1)
    assert llama_calls == []
    with open_engine(spec, None, n_threads=1) as engine:  # gpus: 0, n_gpu_layers 0: not checked
        assert engine.llm.n_vocab() > 0
    assert [call["n_gpu_layers"] for call in llama_calls] == [0]


def test_an_entry_with_cpu_fallback_runs_on_the_cpu_where_no_gpu_is_found(spec):
    """``extra.cpu_fallback`` (a cluster test's stand-in GPU): the job still declares its GPU, and the
    load check lets the model through to the CPU instead of stopping."""
    from thinkbias.llm.llamacpp_backends import require_gpu_offload

    cpu_only()
    asks = replace(spec, gpus=1, extra={**spec.extra, "n_gpu_layers": -1})
    with pytest.raises(GpuOffloadUnavailable):
        require_gpu_offload(asks)
    require_gpu_offload(replace(asks, extra={**asks.extra, "cpu_fallback": True}))
