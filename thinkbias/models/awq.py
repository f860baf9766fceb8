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
from typing import Callable

from thinkbias.data.checksums import sha256_file


@dataclass(frozen=True)
class AwqSettings:
    """AutoAWQ ``quant_config`` plus the calibration set.

    Defaults are AutoAWQ's recommended 4-bit GEMM setup: group size 128, zero point on. The
    calibration set defaults to AutoAWQ's own ``pileval`` (128 samples of 512 tokens from the Pile
    validation split), the set the AWQ authors calibrated with; ``calib_data`` may instead name a hub
    dataset id or a local ``.txt`` file (see ``calibration_samples``).
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
        return {
            "w_bit": self.w_bit,
            "q_group_size": self.q_group_size,
            "zero_point": self.zero_point,
            "version": self.version,
        }


RECORD = "awq_quantization.json"
# A calib_data value with this suffix is a local text file, one calibration sample per line; hub
# dataset ids never end in it, so the two cannot be confused.
LOCAL_CALIB_SUFFIX = ".txt"


def is_local_calibration(calib_data: str) -> bool:
    """Whether ``calib_data`` names a local calibration text file rather than a dataset."""
    return calib_data.endswith(LOCAL_CALIB_SUFFIX)


def calibration_samples(calib_data: str) -> str | list[str]:
    """What AutoAWQ's ``calib_data`` gets: a local ``.txt`` file's non-blank lines (one sample each),
    or the name unchanged (``pileval`` or a hub dataset id, which AutoAWQ downloads itself).

    AutoAWQ skips samples longer than ``max_calib_seq_len`` tokens and concatenates the rest into
    blocks of that length, so the file needs at least that many tokens in short-enough lines.
    """
    if not is_local_calibration(calib_data):
        return calib_data
    path = Path(calib_data)
    if not path.is_file():
        raise FileNotFoundError(f"calibration file {calib_data} does not exist")
    samples = [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not samples:
        raise ValueError(f"calibration file {calib_data} has no non-blank line")
    return samples


def usable_calibration(samples: list[str], count_tokens: Callable[[str], int], max_seq_len: int) -> list[str]:
    """The local calibration samples AutoAWQ will use: those of at most ``max_seq_len`` tokens (it
    drops longer ones). Raises when they hold fewer than ``max_seq_len`` tokens in all, since
    AutoAWQ would then have no complete block to calibrate on."""
    lengths = [count_tokens(s) for s in samples]  # each sample tokenized once
    usable = [s for s, n in zip(samples, lengths) if n <= max_seq_len]
    total = sum(n for n in lengths if n <= max_seq_len)
    if total < max_seq_len:
        raise ValueError(
            f"calibration samples: {len(usable)} of {len(samples)} fit in max_calib_seq_len="
            f"{max_seq_len} tokens and hold {total} tokens in all, fewer than one block of "
            f"{max_seq_len}: add text or shorten the lines"
        )
    return usable


def quantization_record(source_dir: Path, out_dir: Path, settings: AwqSettings, quantizer: str) -> dict:
    """What a quantized snapshot was made from and of: the source's recorded commit, the settings
    (with the sha256 of a local calibration file), the quantizer's version and the sha256 of every
    file written."""
    revision = source_dir / "REVISION"
    local = is_local_calibration(settings.calib_data)
    return {
        "source": source_dir.name,
        "source_revision": revision.read_text().strip() if revision.exists() else None,
        "settings": asdict(settings),
        "calib_data_sha256": sha256_file(Path(settings.calib_data)) if local else None,
        "quantizer": quantizer,
        "files": {p.name: sha256_file(p) for p in sorted(out_dir.iterdir()) if p.is_file() and p.name != RECORD},
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
    into ``dest_dir``, then the record (``awq_quantization.json``), which it returns. Needs the
    ``envs/awq.yaml`` environment; a real model needs a GPU (AutoAWQ falls back to the CPU, which is
    only fast enough for a tiny model)."""
    import awq  # imported here: only this job needs it
    from awq import AutoAWQForCausalLM
    from transformers import AutoTokenizer

    calib_data = calibration_samples(settings.calib_data)  # before loading: a bad file fails fast
    tokenizer = AutoTokenizer.from_pretrained(str(source_dir))
    if isinstance(calib_data, list):
        calib_data = usable_calibration(
            calib_data, lambda text: len(tokenizer(text).input_ids), settings.max_calib_seq_len
        )
    model = AutoAWQForCausalLM.from_pretrained(str(source_dir), low_cpu_mem_usage=True, use_cache=False)
    model.quantize(
        tokenizer,
        quant_config=settings.quant_config(),
        calib_data=calib_data,
        max_calib_samples=settings.max_calib_samples,
        max_calib_seq_len=settings.max_calib_seq_len,
    )
    with tempfile.TemporaryDirectory(dir=dest_dir.parent, prefix=f".{dest_dir.name}-") as tmp:
        model.save_quantized(tmp)
        tokenizer.save_pretrained(tmp)
        record = quantization_record(source_dir, Path(tmp), settings, f"autoawq {awq.__version__}")
        publish(Path(tmp), dest_dir, record)
    return record
