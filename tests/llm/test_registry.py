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
