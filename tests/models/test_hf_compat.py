"""A transformers 5 snapshot as transformers 4 (AutoAWQ's stack) reads it: RoPE's theta where
transformers 4 looks for it, the tokenizer class it knows, the snapshot itself untouched."""

from __future__ import annotations

import json
from pathlib import Path

from thinkbias.models.hf_compat import legacy_config, legacy_tokenizer_config, legacy_view

# what transformers 5.19 wrote for the embedded SmolLM2-135M (rule convert_smollm2_135m_vllm), in part
V5_CONFIG = {
    "model_type": "llama",
    "hidden_size": 576,
    "dtype": "float32",
    "rope_parameters": {"rope_theta": 100000.0, "rope_type": "default"},
    "transformers_version": "5.19.0",
}
V5_TOKENIZER = {"backend": "tokenizers", "eos_token": "<|im_end|>", "tokenizer_class": "TokenizersBackend"}


def test_rope_parameters_become_rope_theta_and_dtype_torch_dtype():
    assert legacy_config(V5_CONFIG) == {
        "model_type": "llama",
        "hidden_size": 576,
        "torch_dtype": "float32",
        "rope_theta": 100000.0,
        "transformers_version": "5.19.0",
    }
    assert V5_CONFIG["rope_parameters"]["rope_theta"] == 100000.0  # the input is not changed


def test_a_scaled_rope_keeps_its_scaling_and_a_transformers_4_config_is_left_as_it_is():
    llama3 = {"rope_parameters": {"rope_theta": 500000.0, "rope_type": "llama3", "factor": 8.0}}
    assert legacy_config(llama3) == {"rope_theta": 500000.0, "rope_scaling": {"rope_type": "llama3", "factor": 8.0}}
    v4 = {"model_type": "llama", "rope_theta": 10000.0, "torch_dtype": "bfloat16"}
    assert legacy_config(v4) == v4


def test_the_tokenizers_backend_class_becomes_the_fast_tokenizer():
    assert legacy_tokenizer_config(V5_TOKENIZER)["tokenizer_class"] == "PreTrainedTokenizerFast"
    v4 = {"tokenizer_class": "GPT2Tokenizer"}
    assert legacy_tokenizer_config(v4) == v4


def write_snapshot(folder: Path, config: dict, tokenizer: dict) -> Path:
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "tokenizer_config.json").write_text(json.dumps(tokenizer))
    (folder / "model.safetensors").write_bytes(b"weights")
    (folder / ".model.safetensors.verified").write_text("memo")
    return folder


def test_the_view_links_the_weights_and_rewrites_only_the_two_configs(tmp_path: Path):
    snapshot = write_snapshot(tmp_path / "snap", V5_CONFIG, V5_TOKENIZER)
    before = {p.name: p.read_bytes() for p in snapshot.iterdir()}
    view = legacy_view(snapshot, tmp_path / "view")
    assert view == tmp_path / "view"
    assert sorted(p.name for p in view.iterdir()) == ["config.json", "model.safetensors", "tokenizer_config.json"]
    assert (view / "model.safetensors").is_symlink() and (view / "model.safetensors").read_bytes() == b"weights"
    assert json.loads((view / "config.json").read_text())["rope_theta"] == 100000.0
    assert json.loads((view / "tokenizer_config.json").read_text())["tokenizer_class"] == "PreTrainedTokenizerFast"
    assert {p.name: p.read_bytes() for p in snapshot.iterdir()} == before


def test_a_snapshot_transformers_4_reads_is_used_as_it_is(tmp_path: Path):
    snapshot = write_snapshot(tmp_path / "snap", {"rope_theta": 10000.0}, {"tokenizer_class": "GPT2Tokenizer"})
    assert legacy_view(snapshot, tmp_path / "view") == snapshot
    assert not (tmp_path / "view").exists()
