"""4-bit AWQ quantization of a pinned fp16/bf16 snapshot with AutoAWQ.

AutoAWQ is archived upstream (its maintainers point to llm-compressor, whose AWQ modifier writes
checkpoints vLLM also loads); this module is the only place that imports it, so swapping the
quantizer means replacing ``quantize_awq`` and the ``envs/awq.yaml`` env, nothing else.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Mapping

from thinkbias.data.checksums import sha256_file
from thinkbias.models.hf_compat import legacy_view


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


def indivisible_linears(in_features: Mapping[str, int], group_size: int) -> dict[str, int]:
    """The linear layers whose input features ``group_size`` does not divide (name -> in_features),
    once per kind of layer (``model.layers.<i>.`` dropped): AutoAWQ splits each weight row into
    groups of ``group_size`` input features and stops at the first layer where that leaves a rest."""
    bad: dict[str, int] = {}
    for name, n in in_features.items():
        kind = re.sub(r"^(?:.*\.)?layers\.\d+\.", "", name)
        if n % group_size and kind not in bad:
            bad[kind] = n
    return bad


def check_group_size(in_features: Mapping[str, int], group_size: int) -> None:
    """Raise, naming the layers and their input features, when ``group_size`` cannot quantize them
    (before AutoAWQ calibrates, whose own assertion names neither the layer nor a group size that fits)."""
    bad = indivisible_linears(in_features, group_size)
    if bad:
        fits = [g for g in (128, 64, 32) if g < group_size and not indivisible_linears(in_features, g)]
        layers = ", ".join(f"{kind} ({n} input features)" for kind, n in bad.items())
        raise ValueError(
            f"q_group_size {group_size} does not divide the input features of {layers}"
            + (f": q_group_size {fits[0]} divides every layer's" if fits else "")
        )


def calibration_dtype(on_gpu: bool) -> str:
    """The dtype AutoAWQ loads the source in to search scales and clipping: its own float16 on a GPU;
    float32 on the CPU, where torch multiplies float16 matrices without vector kernels (a 2048 x 576
    by 576 x 1536 product took 9.2 s in float16, 0.16 s in float32, one thread). Either way the
    checkpoint's scales are float16 (AutoAWQ packs every layer in float16)."""
    return "float16" if on_gpu else "float32"


def unquantized_to_float16(model: object) -> None:
    """Cast the floating-point parameters AutoAWQ leaves unquantized (embeddings, norms, an untied
    head) to float16 in place; the packed layers' tensors (``WQLinear_*``) stay as they are."""
    import torch

    for module in model.modules():
        if type(module).__name__.startswith("WQLinear"):
            continue
        for param in module.parameters(recurse=False):
            if param.is_floating_point():
                param.data = param.data.to(torch.float16)


def cpu_quantizer() -> type:
    """AutoAWQ's quantizer (0.2.9), corrected and sped up for the CPU.

    - **Scale search, corrected.** ``AwqQuantizer._compute_best_scale`` keeps the inspected module's
      state as ``{k: v.cpu() for k, v in module.state_dict().items()}`` to restore it after each of
      its 20 candidate scalings. On a GPU that is a copy; on the CPU ``.cpu()`` returns the tensor
      itself, so the candidate's in-place ``fc.weight.mul_(scales)`` rewrites the state it restores.
      Every later candidate then starts from weights already multiplied by the first candidate's
      scales, and the layer keeps them: unless the first candidate's scales are all 1 (``duo_scaling``
      off), the checkpoint computes another function. On SmolLM2-135M the hidden state after the
      first layer was 0.58 off the source's (relative), plain rounding 0.10, and the quantized model
      generated no words. Here the state is copied first; the search is otherwise AutoAWQ's.
    - **Clipping search, as matrix products.** ``_compute_best_clip`` tries 10 clipping thresholds
      per layer and group and compares each clipped, quantized weight's outputs on 512 calibration
      tokens with the original's, forming them as ``(input_feat * w).sum(-1)``: an elementwise
      product of out_features x tokens x in_features values, then a sum, 80% of AutoAWQ's time on
      SmolLM2-135M (about 100 of 125 CPU-s per layer). Here ``torch.einsum`` computes the same sums
      (one batched matrix product per group): the same thresholds, the same choice.
    """
    import torch
    from awq.quantize.quantizer import AwqQuantizer
    from awq.utils.utils import clear_memory

    class CpuAwqQuantizer(AwqQuantizer):
        def _compute_best_scale(self, x, w_mean, x_mean, module2inspect, linears2scale, fp16_output, kwargs={}):
            state_dict = module2inspect.state_dict
            # AutoAWQ's snapshot of the state, as copies (its .cpu() is no copy on the CPU)
            module2inspect.state_dict = lambda *a, **k: {n: t.clone() for n, t in state_dict(*a, **k).items()}
            try:
                return super()._compute_best_scale(
                    x, w_mean, x_mean, module2inspect, linears2scale, fp16_output, kwargs
                )
            finally:
                del module2inspect.state_dict  # the module's own method again

        @torch.no_grad()
        def _compute_best_clip(self, w, input_feat, n_grid=20, max_shrink=0.5, n_sample_token=512):
            assert w.dim() == 2
            out_features, in_features = w.shape
            group_size = self.group_size if self.group_size > 0 else in_features
            x = input_feat.view(-1, input_feat.shape[-1])
            x = x[:: max(1, x.shape[0] // n_sample_token)]  # tokens, in_features
            x = x.reshape(x.shape[0], -1, group_size).to(w.device)  # tokens, n_group, group size
            w = w.reshape(out_features, 1, -1, group_size)
            oc_batch_size = 256 if out_features % 256 == 0 else 64
            assert out_features % oc_batch_size == 0
            best_all = []
            for start in range(0, out_features, oc_batch_size):
                wb = w[start : start + oc_batch_size]
                org_max_val = wb.abs().amax(dim=-1, keepdim=True)  # co, 1, n_group, 1
                best_max_val = org_max_val.clone()
                min_errs = torch.ones_like(org_max_val) * 1e9
                org_out = torch.einsum("tgk,cgk->ctg", x, wb[:, 0])  # co, tokens, n_group
                for i_s in range(int(max_shrink * n_grid)):
                    max_val = org_max_val * (1 - i_s / n_grid)
                    q_w = self.pseudo_quantize_tensor(torch.clamp(wb, -max_val, max_val))[0]
                    cur_out = torch.einsum("tgk,cgk->ctg", x, q_w[:, 0])
                    err = (cur_out - org_out).pow(2).mean(dim=1).view(min_errs.shape)
                    better = err < min_errs
                    min_errs[better] = err[better]
                    best_max_val[better] = max_val[better]
                best_all.append(best_max_val)
            clear_memory(x)
            return torch.cat(best_all, dim=0).squeeze(1)

    return CpuAwqQuantizer


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
    ``envs/awq.yaml`` environment. On a GPU it runs AutoAWQ as released; without one it calibrates in
    float32 with ``cpu_quantizer`` and saves what the GPU path saves (a 135M model takes minutes; a
    real model needs the GPU)."""
    import awq  # imported here: only this job needs it
    import torch
    from awq import AutoAWQForCausalLM
    from transformers import AutoTokenizer

    calib_data = calibration_samples(settings.calib_data)  # before loading: a bad file fails fast
    dest_dir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest_dir.parent, prefix=f".{dest_dir.name}-") as tmp:
        # a snapshot written by transformers 5 (the vLLM env's GGUF conversion), as AutoAWQ's reads it
        source = legacy_view(source_dir, Path(tmp) / "source")
        tokenizer = AutoTokenizer.from_pretrained(str(source))
        if isinstance(calib_data, list):
            calib_data = usable_calibration(
                calib_data, lambda text: len(tokenizer(text).input_ids), settings.max_calib_seq_len
            )
        dtype = calibration_dtype(torch.cuda.is_available())
        model = AutoAWQForCausalLM.from_pretrained(
            str(source), torch_dtype=getattr(torch, dtype), low_cpu_mem_usage=True, use_cache=False
        )
        linears = {n: m.in_features for n, m in model.model.named_modules() if isinstance(m, torch.nn.Linear)}
        check_group_size({n: f for n, f in linears.items() if "lm_head" not in n}, settings.q_group_size)
        model.quantize(
            tokenizer,
            quant_config=settings.quant_config(),
            calib_data=calib_data,
            max_calib_samples=settings.max_calib_samples,
            max_calib_seq_len=settings.max_calib_seq_len,
            **({} if dtype == "float16" else {"quantizer_cls": cpu_quantizer()}),
        )
        if dtype != "float16":
            unquantized_to_float16(model.model)  # what AutoAWQ saves on a GPU, calibrating in float16
        out = Path(tmp) / "out"
        model.save_quantized(str(out))
        tokenizer.save_pretrained(str(out))
        quantizer = f"autoawq {awq.__version__}" + ("" if dtype == "float16" else " with cpu_quantizer")
        quantizer += f", calibrated in {dtype}"
        record = quantization_record(source_dir, out, settings, quantizer)
        publish(out, dest_dir, record)
    return record
