"""The AWQ quantization rule's bookkeeping: settings, the record, and the atomic publish.

AutoAWQ itself needs a GPU (scripts/gpu/ has the GPU checks); these tests cover everything around it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import yaml

from tests.helpers import REPO
from thinkbias.models.awq import RECORD, AwqSettings, publish, quantization_record


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
        assert settings.w_bit == 4 and settings.q_group_size == 128
        assert entry["files"] == [{"name": RECORD}]


def test_record_names_source_commit_and_every_file(tmp_path: Path):
    source, out = tmp_path / "gemma", tmp_path / "out"
    source.mkdir()
    out.mkdir()
    (source / "REVISION").write_text("a" * 40 + "\n")
    (out / "model.safetensors").write_bytes(b"weights")
    (out / "config.json").write_text("{}")
    record = quantization_record(source, out, AwqSettings(), "autoawq 0.2.9")
    assert record["source_revision"] == "a" * 40 and record["settings"]["q_group_size"] == 128
    assert record["files"] == {"config.json": hashlib.sha256(b"{}").hexdigest(),
                               "model.safetensors": hashlib.sha256(b"weights").hexdigest()}


def test_publish_moves_everything_and_writes_the_record_last(tmp_path: Path):
    out, dest = tmp_path / "out", tmp_path / "models" / "m-awq"
    out.mkdir()
    (out / "model.safetensors").write_bytes(b"w")
    publish(out, dest, {"files": {"model.safetensors": "x"}})
    assert sorted(p.name for p in dest.iterdir()) == [RECORD, "model.safetensors"]
    assert json.loads((dest / RECORD).read_text()) == {"files": {"model.safetensors": "x"}}
    assert list(out.iterdir()) == []
