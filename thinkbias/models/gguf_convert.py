"""A Hugging Face snapshot of a GGUF model, so that vLLM can load the same weights llama.cpp runs.

transformers reads the GGUF (``from_pretrained(..., gguf_file=...)``), dequantizing every tensor:
in float32 the Q4_1 weights are reproduced exactly, so the snapshot holds the embedded model's
weights, not an approximation of them. The snapshot is written beside a ``SHA256SUMS`` record (the
format a hub download writes, so weights are verified before each load like any snapshot) and a
``gguf_conversion.json`` naming the GGUF's sha256 and the settings.

The conversion needs torch, transformers, gguf and accelerate: it runs in this process where they
import (the vLLM conda env), else in the vLLM environment's interpreter (``.venv-vllm``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from thinkbias.data.checksums import sha256_file
from thinkbias.models.hub import SHA256_RECORD

CONVERSION_RECORD = "gguf_conversion.json"
DTYPES = ("float32", "bfloat16", "float16")
NEEDED = ("torch", "transformers", "gguf", "accelerate")


def _convert_here(gguf: Path, out_dir: Path, dtype: str) -> str:
    """Load the GGUF with transformers and save model and tokenizer to ``out_dir``; returns the
    transformers version."""
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=getattr(torch, dtype))
    # a model loaded from GGUF carries its quantizer, which save_pretrained refuses to serialise; the
    # tensors are already dequantized
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(str(out_dir))
    tokenizer.save_pretrained(str(out_dir))
    return transformers.__version__


def conversion_python() -> Path:
    """The interpreter that converts: this one where every needed package imports, else the vLLM env's."""
    if all(importlib.util.find_spec(name) is not None for name in NEEDED):
        return Path(sys.executable)
    from thinkbias.build.vllm_env import venv_python

    return venv_python(Path(__file__).resolve().parents[2])


def convert_gguf_to_hf(gguf: Path, dest_dir: Path, dtype: str = "float32") -> dict:
    """Convert ``gguf`` into a snapshot in ``dest_dir`` and return the record of what was written.

    The files land in a temporary folder first and ``SHA256SUMS`` is written last, so a folder with
    a record is always complete."""
    if dtype not in DTYPES:
        raise ValueError(f"gguf conversion: dtype '{dtype}' is not one of {', '.join(DTYPES)}")
    gguf, dest_dir = Path(gguf).resolve(), Path(dest_dir)
    dest_dir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".convert-", dir=dest_dir.parent) as tmp:
        out = Path(tmp) / "snapshot"
        python = conversion_python()
        if python == Path(sys.executable):
            converter = _convert_here(gguf, out, dtype)
        else:
            env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
            cmd = [str(python), "-m", "thinkbias.models.gguf_convert", str(gguf), str(out), dtype]
            done = subprocess.run(cmd, env=env, check=False, capture_output=True, text=True)
            if done.returncode != 0:
                raise RuntimeError(f"converting {gguf} with {python} failed:\n{done.stderr[-3000:]}")
            converter = done.stdout.strip().splitlines()[-1]
        files = {p.name: sha256_file(p) for p in sorted(out.iterdir()) if p.is_file()}
        record = {
            "source": gguf.name,
            "source_sha256": sha256_file(gguf),
            "dtype": dtype,
            "converter": f"transformers {converter}",
            "files": files,
        }
        (out / CONVERSION_RECORD).write_text(json.dumps(record, indent=2) + "\n")
        dest_dir.mkdir(parents=True, exist_ok=True)
        for item in out.iterdir():
            os.replace(item, dest_dir / item.name)
        listing = "".join(f"{sha}  {name}\n" for name, sha in sorted(files.items()))
        (Path(tmp) / SHA256_RECORD).write_text(listing)
        shutil.move(str(Path(tmp) / SHA256_RECORD), str(dest_dir / SHA256_RECORD))
    return record


if __name__ == "__main__":  # python -m thinkbias.models.gguf_convert GGUF OUT_DIR DTYPE (in the vLLM env)
    print(_convert_here(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]))
