"""4-bit AWQ quantization of a pinned fp16/bf16 snapshot with AutoAWQ.

AutoAWQ is archived upstream (its maintainers point to llm-compressor, whose AWQ modifier writes
checkpoints vLLM also loads); this module is the only place that imports it, so swapping the
quantizer means replacing ``quantize_awq`` and the ``envs/awq.yaml`` env, nothing else.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from thinkbias.models.hub import file_sha256


@dataclass(frozen=True)
class AwqSettings:
    """AutoAWQ ``quant_config`` plus the calibration set.

    Defaults are AutoAWQ's recommended 4-bit GEMM setup: group size 128, zero point on. The
    calibration set defaults to AutoAWQ's own ``pileval`` (128 samples of 512 tokens from the Pile
    validation split), the set the AWQ authors calibrated with.
    """

    w_bit: int = 4
    q_group_size: int = 128
    zero_point: bool = True
    version: str = "GEMM"
    calib_data: str = "pileval"
    max_calib_samples: int = 128
    max_calib_seq_len: int = 512

    def quant_config(self) -> dict:
        """The ``quant_config`` dict AutoAWQ expects."""
        return {"w_bit": self.w_bit, "q_group_size": self.q_group_size,
                "zero_point": self.zero_point, "version": self.version}


RECORD = "awq_quantization.json"


def quantization_record(source_dir: Path, out_dir: Path, settings: AwqSettings, quantizer: str) -> dict:
    """What a quantized snapshot was made from and of: the source's recorded commit, the settings,
    the quantizer's version and the sha256 of every file written."""
    revision = source_dir / "REVISION"
    return {
        "source": source_dir.name,
        "source_revision": revision.read_text().strip() if revision.exists() else None,
        "settings": asdict(settings),
        "quantizer": quantizer,
        "files": {p.name: file_sha256(p) for p in sorted(out_dir.iterdir()) if p.is_file() and p.name != RECORD},
    }


def publish(out_dir: Path, dest_dir: Path, record: dict) -> None:
    """Move a finished snapshot from ``out_dir`` into ``dest_dir`` and write the record last, so a
    folder with a record is always complete."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    for item in out_dir.iterdir():
        os.replace(item, dest_dir / item.name)
    tmp = dest_dir / f".{RECORD}.tmp"
    tmp.write_text(json.dumps(record, indent=2) + "\n")
    os.replace(tmp, dest_dir / RECORD)


def quantize_awq(source_dir: Path, dest_dir: Path, settings: AwqSettings = AwqSettings()) -> dict:
    """Quantize the model in ``source_dir`` and save the AWQ checkpoint (weights, config, tokenizer)
    into ``dest_dir``, then the record (``awq_quantization.json``), which it returns. Needs a GPU and
    the ``envs/awq.yaml`` environment."""
    import awq  # imported here: only this GPU job needs it
    from awq import AutoAWQForCausalLM
    from transformers import AutoTokenizer

    model = AutoAWQForCausalLM.from_pretrained(str(source_dir), low_cpu_mem_usage=True, use_cache=False)
    tokenizer = AutoTokenizer.from_pretrained(str(source_dir))
    model.quantize(tokenizer, quant_config=settings.quant_config(), calib_data=settings.calib_data,
                   max_calib_samples=settings.max_calib_samples, max_calib_seq_len=settings.max_calib_seq_len)
    with tempfile.TemporaryDirectory(dir=dest_dir.parent, prefix=f".{dest_dir.name}-") as tmp:
        model.save_quantized(tmp)
        tokenizer.save_pretrained(tmp)
        record = quantization_record(source_dir, Path(tmp), settings, f"autoawq {awq.__version__}")
        publish(Path(tmp), dest_dir, record)
    return record
