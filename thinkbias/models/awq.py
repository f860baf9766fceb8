"""4-bit AWQ quantization of a pinned fp16/bf16 snapshot with AutoAWQ.

AutoAWQ is archived upstream (its maintainers point to llm-compressor, whose AWQ modifier writes
checkpoints vLLM also loads); this module is the only place that imports it, so swapping the
quantizer means replacing ``quantize_awq`` and the ``envs/awq.yaml`` env, nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


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


def quantize_awq(source_dir: Path, dest_dir: Path, settings: AwqSettings = AwqSettings()) -> None:
    """Quantize the model in ``source_dir`` and save the AWQ checkpoint (weights, config, tokenizer)
    into ``dest_dir``. Needs a GPU and the ``envs/awq.yaml`` environment."""
    from awq import AutoAWQForCausalLM  # imported here: only this GPU job needs it
    from transformers import AutoTokenizer

    model = AutoAWQForCausalLM.from_pretrained(str(source_dir), low_cpu_mem_usage=True, use_cache=False)
    tokenizer = AutoTokenizer.from_pretrained(str(source_dir))
    model.quantize(tokenizer, quant_config=settings.quant_config(), calib_data=settings.calib_data,
                   max_calib_samples=settings.max_calib_samples, max_calib_seq_len=settings.max_calib_seq_len)
    dest_dir.mkdir(parents=True, exist_ok=True)
    model.save_quantized(str(dest_dir))
    tokenizer.save_pretrained(str(dest_dir))
