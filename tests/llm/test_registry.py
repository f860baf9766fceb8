from pathlib import Path

import pytest
import yaml

from thinkbias.llm.registry import load_model_spec, validate_entry

REPO = Path(__file__).resolve().parents[2]


def test_repository_registry_entries_are_valid():
    registry = yaml.safe_load((REPO / "config/models.yaml").read_text())
    for model_id, entry in registry.items():
        validate_entry(model_id, entry)


def test_embedded_spec():
    spec = load_model_spec(REPO / "config/models.yaml", "smollm2-135m")
    assert spec.backend == "llamacpp" and spec.thinking == "prompt"
    assert spec.weights.endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    assert spec.weights_sha256 == "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"


def test_errors_name_the_problem(tmp_path):
    reg = tmp_path / "models.yaml"
    reg.write_text(yaml.safe_dump({
        "a": {"backend": "tgi"},
        "b": {"backend": "llamacpp", "files": [{"name": "x.gguf"}], "n_gpu_layers": 3},
        "c": {"backend": "openai", "api_model": "gpt-x", "api_key_env": "MY_KEY", "n_ctx": "big"},
        "d": {"backend": "openai", "api_model": "gpt-x", "api_key_env": "MY_KEY"},
    }))
    with pytest.raises(ValueError, match="unknown backend 'tgi'"):
        load_model_spec(reg, "a")
    with pytest.raises(ValueError, match="unknown registry key.*n_gpu_layers"):
        load_model_spec(reg, "b")
    with pytest.raises(ValueError, match="n_ctx"):
        load_model_spec(reg, "c")
    with pytest.raises(ValueError, match="not in the registry"):
        load_model_spec(reg, "zzz")
    d = load_model_spec(reg, "d")
    assert d.weights == "" and d.api_key_env == "MY_KEY" and d.n_ctx == 4096


def test_branch_revision_is_rejected_naming_the_key(tmp_path):
    reg = tmp_path / "models.yaml"
    reg.write_text(yaml.safe_dump({"m": {"backend": "vllm", "source": {"repo": "o/m", "revision": "main"},
                                         "files": [{"name": "model.safetensors"}]}}))
    with pytest.raises(ValueError, match="revision"):
        load_model_spec(reg, "m")


def test_quantized_weights_identity_follows_settings_and_source_commit(tmp_path):
    def identity(group: int, revision: str) -> str:
        reg = tmp_path / f"models-{group}-{revision}.yaml"
        reg.write_text(yaml.safe_dump({
            "src": {"backend": "vllm", "source": {"repo": "o/src", "revision": revision}, "files": [{"name": "a"}]},
            "q": {"backend": "vllm", "quantize": {"from": "src", "method": "awq", "q_group_size": group},
                  "files": [{"name": "awq_quantization.json"}], "gpus": 1},
        }))
        return load_model_spec(reg, "q").weights_sha256

    base = identity(128, "a" * 40)
    assert base.startswith("quantized:") and base == identity(128, "a" * 40)
    assert base != identity(64, "a" * 40) and base != identity(128, "b" * 40)
    real = load_model_spec(REPO / "config/models.yaml", "gemma-2-27b-it-awq")
    assert real.weights_sha256.startswith("quantized:") and real.weights.endswith("gemma-2-27b-it-awq")
