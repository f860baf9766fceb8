"""The AWQ quantization rule's bookkeeping: settings, the calibration file, the record, and the
atomic publish. AutoAWQ itself runs in tests/models/test_awq_cpu.py (a tiny model on the CPU).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from tests.helpers import REPO
from thinkbias.models.awq import (
    RECORD,
    AwqSettings,
    calibration_dtype,
    calibration_samples,
    check_group_size,
    indivisible_linears,
    publish,
    quantization_record,
    usable_calibration,
)


def test_settings_are_autoawq_quant_config_and_match_the_schema_defaults():
    settings = AwqSettings()
    assert settings.quant_config() == {"w_bit": 4, "q_group_size": 128, "zero_point": True, "version": "GEMM"}
    schema = yaml.safe_load((REPO / "config/schema/models.schema.yaml").read_text())
    fields = schema["properties"]["quantize"]["properties"]
    assert {k: fields[k]["default"] for k in fields if "default" in fields[k]} == vars(settings)


def test_registry_quantize_entries_build_settings():
    registry = yaml.safe_load((REPO / "config/models.yaml").read_text())
    quantized = {m: e for m, e in registry.items() if "quantize" in e}
    assert "gemma-2-27b-it-awq" in quantized
    for entry in quantized.values():
        settings = AwqSettings(**{k: v for k, v in entry["quantize"].items() if k not in ("from", "method")})
        assert settings.w_bit == 4 and settings.q_group_size in (64, 128)
        assert entry["files"] == [{"name": RECORD}]
    # the full configs' 128, except where it cannot split SmolLM2-135M's 576 hidden features into groups
    groups = {m: e["quantize"]["q_group_size"] for m, e in quantized.items()}
    assert groups == {"gemma-2-27b-it-awq": 128, "smollm2-135m-vllm-awq": 64}


# SmolLM2-135M: hidden size 576, intermediate size 1536 (the linear layers' input features)
SMOLLM2_LINEARS = {
    f"model.layers.{i}.{name}": n
    for i in range(2)
    for name, n in {
        "self_attn.q_proj": 576,
        "self_attn.k_proj": 576,
        "self_attn.v_proj": 576,
        "self_attn.o_proj": 576,
        "mlp.gate_proj": 576,
        "mlp.up_proj": 576,
        "mlp.down_proj": 1536,
    }.items()
}


def test_a_group_size_that_leaves_a_rest_names_each_kind_of_layer_once_and_one_that_fits():
    assert indivisible_linears(SMOLLM2_LINEARS, 64) == {}
    bad = indivisible_linears(SMOLLM2_LINEARS, 128)
    assert bad == {k: 576 for k in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
                                   "mlp.gate_proj", "mlp.up_proj")}  # fmt: skip
    with pytest.raises(ValueError, match=r"q_group_size 128 does not divide .*self_attn.q_proj \(576 input features\)"
                       r".*: q_group_size 64 divides every layer's$"):  # fmt: skip
        check_group_size(SMOLLM2_LINEARS, 128)
    check_group_size(SMOLLM2_LINEARS, 64)
    check_group_size({"model.layers.0.mlp.down_proj": 1536}, 128)


def test_calibration_runs_in_float16_on_a_gpu_and_float32_on_the_cpu():
    assert calibration_dtype(on_gpu=True) == "float16" and calibration_dtype(on_gpu=False) == "float32"


def test_record_names_source_commit_and_every_file(tmp_path: Path):
    source, out = tmp_path / "gemma", tmp_path / "out"
    source.mkdir()
    out.mkdir()
    (source / "REVISION").write_text("a" * 40 + "\n")
    (out / "model.safetensors").write_bytes(b"weights")
    (out / "config.json").write_text("{}")
    record = quantization_record(source, out, AwqSettings(), "autoawq 0.2.9")
    assert record["source_revision"] == "a" * 40 and record["settings"]["q_group_size"] == 128
    assert record["files"] == {
        "config.json": hashlib.sha256(b"{}").hexdigest(),
        "model.safetensors": hashlib.sha256(b"weights").hexdigest(),
    }
    assert record["calib_data_sha256"] is None


def test_dataset_names_pass_through_and_a_txt_file_gives_its_lines(tmp_path: Path):
    assert calibration_samples("pileval") == "pileval"
    assert calibration_samples("mit-han-lab/pile-val-backup") == "mit-han-lab/pile-val-backup"
    calib = tmp_path / "calib.txt"
    calib.write_text("first sample\n\n  second sample  \n   \nthird\n")
    assert calibration_samples(str(calib)) == ["first sample", "second sample", "third"]


def test_a_missing_or_blank_calibration_file_fails_before_any_model_loads(tmp_path: Path):
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        calibration_samples(str(tmp_path / "missing.txt"))
    blank = tmp_path / "blank.txt"
    blank.write_text("\n  \n")
    with pytest.raises(ValueError, match="no non-blank line"):
        calibration_samples(str(blank))


def test_record_keeps_the_local_calibration_file_sha256(tmp_path: Path):
    source, out = tmp_path / "gemma", tmp_path / "out"
    source.mkdir()
    out.mkdir()
    calib = tmp_path / "calib.txt"
    calib.write_text("one sample\n")
    record = quantization_record(source, out, AwqSettings(calib_data=str(calib)), "autoawq 0.2.9")
    assert record["calib_data_sha256"] == hashlib.sha256(b"one sample\n").hexdigest()
    assert record["settings"]["calib_data"] == str(calib) and record["source_revision"] is None


def test_publish_moves_everything_and_writes_the_record_last(tmp_path: Path):
    out, dest = tmp_path / "out", tmp_path / "models" / "m-awq"
    out.mkdir()
    (out / "model.safetensors").write_bytes(b"w")
    publish(out, dest, {"files": {"model.safetensors": "x"}})
    assert sorted(p.name for p in dest.iterdir()) == [RECORD, "model.safetensors"]
    assert json.loads((dest / RECORD).read_text()) == {"files": {"model.safetensors": "x"}}
    assert list(out.iterdir()) == []


def test_usable_calibration_drops_long_lines_and_needs_one_block():
    count = lambda text: len(text.split())  # noqa: E731  (one token per word)
    samples = ["a b c", "d e f g h i j k", "l m"]
    assert usable_calibration(samples, count, max_seq_len=5) == ["a b c", "l m"]
    with pytest.raises(ValueError, match=r"2 of 3 fit in max_calib_seq_len=6 tokens and hold 5 tokens"):
        usable_calibration(samples, count, max_seq_len=6)
