"""AutoAWQ for real: a tiny randomly initialised Gemma-2 (the architecture of gemma-2-27b-it-awq) is
quantized on the CPU by ``quantize_awq`` with a local calibration file, and the published folder is
checked: the record, the AWQ config, the packed 4-bit tensors, and that they decode to weights that
compute nearly what the source model computes.

`python3 tb.py test` installs AutoAWQ's CPU stack and requires this test to run
(THINKBIAS_REQUIRE_AWQ=1); a bare pytest without AutoAWQ skips it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
from pathlib import Path

import pytest

from thinkbias.models.awq import RECORD, AwqSettings, quantize_awq
from thinkbias.data.checksums import sha256_file

pytestmark = pytest.mark.slow
# torch and AutoAWQ are imported by the tests that use them, not here: importing them costs every
# pytest worker seconds at collection, also when this file's tests are deselected
if importlib.util.find_spec("awq") is None:
    if os.environ.get("THINKBIAS_REQUIRE_AWQ"):
        raise ImportError("AutoAWQ is not installed, and THINKBIAS_REQUIRE_AWQ is set (python3 tb.py test installs it)")
    pytest.skip("AutoAWQ is not installed (python3 tb.py test installs its CPU stack)", allow_module_level=True)

WORDS = (
    "the quick brown fox jumps over a lazy dog while two people ask whether the model "
    "answers each question the same way when only the name or the order of options differs"
).split()
LAYERS, HIDDEN, INTERMEDIATE, HEADS, KV_HEADS, HEAD_DIM, GROUP = 2, 128, 256, 4, 2, 32, 128
# (in_features, out_features) of every linear layer in a decoder layer
LINEARS = {
    "self_attn.q_proj": (HIDDEN, HEADS * HEAD_DIM),
    "self_attn.k_proj": (HIDDEN, KV_HEADS * HEAD_DIM),
    "self_attn.v_proj": (HIDDEN, KV_HEADS * HEAD_DIM),
    "self_attn.o_proj": (HEADS * HEAD_DIM, HIDDEN),
    "mlp.gate_proj": (HIDDEN, INTERMEDIATE),
    "mlp.up_proj": (HIDDEN, INTERMEDIATE),
    "mlp.down_proj": (INTERMEDIATE, HIDDEN),
}


def write_calibration(path: Path, lines: int = 48) -> Path:
    """A deterministic calibration file: short lines of words the tokenizer knows."""
    rng = random.Random(0)
    path.write_text(
        "\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 20))) for _ in range(lines)) + "\n"
    )
    return path


def build_tiny_gemma2(folder: Path, corpus: list[str]) -> None:
    """Save a random fp16 Gemma-2 with a word-level tokenizer trained on ``corpus`` into ``folder``,
    laid out as a pinned snapshot (with REVISION)."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import Gemma2Config, Gemma2ForCausalLM, PreTrainedTokenizerFast

    tok = Tokenizer(models.WordLevel(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(corpus, trainers.WordLevelTrainer(special_tokens=["<unk>", "<pad>", "<bos>", "<eos>"]))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>", bos_token="<bos>", eos_token="<eos>"
    )
    config = Gemma2Config(
        vocab_size=128,
        hidden_size=HIDDEN,
        intermediate_size=INTERMEDIATE,
        num_hidden_layers=LAYERS,
        num_attention_heads=HEADS,
        num_key_value_heads=KV_HEADS,
        head_dim=HEAD_DIM,
        max_position_embeddings=256,
        sliding_window=64,
        attn_implementation="eager",
        torch_dtype="float16",
    )
    torch.manual_seed(0)
    Gemma2ForCausalLM(config).to(torch.float16).save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    (folder / "REVISION").write_text("c" * 40 + "\n")


@pytest.fixture(scope="module")
def quantized(tmp_path_factory) -> dict:
    """The source snapshot, the published AWQ folder and the record ``quantize_awq`` returned."""
    root = tmp_path_factory.mktemp("awq")
    calib = write_calibration(root / "calib.txt")
    source = root / "models" / "tiny-gemma2"
    build_tiny_gemma2(source, calib.read_text().splitlines())
    dest = root / "models" / "tiny-gemma2-awq"
    settings = AwqSettings(calib_data=str(calib), max_calib_samples=48, max_calib_seq_len=32)
    record = quantize_awq(source, dest, settings)
    return {"source": source, "dest": dest, "calib": calib, "settings": settings, "record": record}


def test_record_names_source_calibration_and_every_file_it_published(quantized):
    dest, record = quantized["dest"], quantized["record"]
    assert json.loads((dest / RECORD).read_text()) == record
    assert record["source"] == "tiny-gemma2" and record["source_revision"] == "c" * 40
    assert record["settings"]["calib_data"] == str(quantized["calib"])
    assert record["calib_data_sha256"] == sha256_file(quantized["calib"])
    assert record["quantizer"].startswith("autoawq ")
    published = {p.name for p in dest.iterdir()} - {RECORD}
    assert {"config.json", "model.safetensors", "tokenizer.json"} <= published
    assert record["files"] == {name: sha256_file(dest / name) for name in sorted(published)}
    assert not list(dest.parent.glob(".tiny-gemma2-awq-*"))  # the staging folder is gone


def test_config_declares_4bit_awq_gemm(quantized):
    config = json.loads((quantized["dest"] / "config.json").read_text())
    assert config["model_type"] == "gemma2"
    assert config["quantization_config"] == {
        "quant_method": "awq",
        "bits": 4,
        "group_size": GROUP,
        "zero_point": True,
        "version": "gemm",
        "modules_to_not_convert": None,
    }


def test_every_linear_is_packed_eight_4bit_weights_per_int32(quantized):
    import torch
    from safetensors.torch import load_file

    tensors = load_file(quantized["dest"] / "model.safetensors")
    for layer in range(LAYERS):
        for name, (in_f, out_f) in LINEARS.items():
            prefix = f"model.layers.{layer}.{name}"
            qweight, qzeros, scales = (tensors[f"{prefix}.{t}"] for t in ("qweight", "qzeros", "scales"))
            assert f"{prefix}.weight" not in tensors
            assert qweight.dtype == qzeros.dtype == torch.int32 and scales.dtype == torch.float16
            assert qweight.shape == (in_f, out_f // 8)
            assert qzeros.shape == (in_f // GROUP, out_f // 8) and scales.shape == (in_f // GROUP, out_f)
    assert tensors["model.embed_tokens.weight"].dtype == torch.float16  # embeddings stay unquantized


def test_packed_weights_decode_to_a_model_close_to_the_source(quantized):
    """Unpacked back to floats, the checkpoint's logits stay near the source model's (a 4-bit error,
    about 0.15-0.3 relative here), far from what a wrong packing or lost layer gives (above 1)."""
    import torch
    from awq.utils.packing_utils import dequantize_gemm
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source, dest = quantized["source"], quantized["dest"]
    packed = load_file(dest / "model.safetensors")
    state = {}
    for key, value in packed.items():
        if key.endswith(".qweight"):
            prefix = key.removesuffix(".qweight")
            weight = dequantize_gemm(value, packed[f"{prefix}.qzeros"], packed[f"{prefix}.scales"], 4, GROUP)
            state[f"{prefix}.weight"] = weight.T.float()
        elif not key.endswith((".qzeros", ".scales")):
            state[key] = value.float()
    reference = AutoModelForCausalLM.from_pretrained(source, torch_dtype=torch.float32)
    decoded = AutoModelForCausalLM.from_pretrained(source, torch_dtype=torch.float32)
    loaded = decoded.load_state_dict(state, strict=False)
    assert loaded.unexpected_keys == [] and loaded.missing_keys == ["lm_head.weight"]  # tied to the embeddings
    tokenizer = AutoTokenizer.from_pretrained(dest)
    ids = tokenizer(quantized["calib"].read_text().splitlines()[0], return_tensors="pt").input_ids
    with torch.no_grad():
        expected, got = reference(ids).logits, decoded(ids).logits
    assert not torch.equal(expected, got)
    assert float((got - expected).norm() / expected.norm()) < 0.5


def bare_quantizer(cls):
    """A quantizer of ``cls`` with only the settings its searches read (4-bit, groups of 64, zero
    point, duo scaling, no batching of calibration samples)."""
    quantizer = cls.__new__(cls)
    quantizer.w_bit, quantizer.group_size, quantizer.zero_point = 4, 64, True
    quantizer.duo_scaling, quantizer.n_parallel_calib_samples, quantizer.max_chunk_memory = True, None, 1024**3
    return quantizer


def test_the_cpu_scale_search_restores_the_weights_and_picks_the_best_candidate():
    """AutoAWQ's own search on the CPU leaves the layer's weights multiplied by its first candidate's
    scales (its state snapshot is no copy there); ``cpu_quantizer``'s leaves them as they were and
    returns the candidate scaling of least output error, each candidate tried on the original weights."""
    import torch
    from awq.quantize.quantizer import AwqQuantizer

    from thinkbias.models.awq import cpu_quantizer

    torch.manual_seed(0)
    x = torch.randn(1, 200, 128) * (torch.rand(128) * 4)
    x_mean = x.abs().view(-1, 128).mean(0)

    def search(cls):
        torch.manual_seed(1)
        fc = torch.nn.Linear(128, 64, bias=False)
        before = fc.weight.detach().clone()
        w = fc.weight.detach().view(-1, 64).abs()
        w_mean = (w / (w.amax(dim=1, keepdim=True) + 1e-6)).view(64, 128).mean(0)
        with torch.no_grad():
            scales = bare_quantizer(cls)._compute_best_scale(x, w_mean, x_mean, fc, [fc], fc(x))
        return scales, before, fc.weight.detach(), w_mean

    _, before, after, _ = search(AwqQuantizer)
    assert not torch.equal(after, before)  # what the CPU quantizer corrects
    scales, before, after, w_mean = search(cpu_quantizer())
    assert torch.equal(after, before)
    quantizer, errors = bare_quantizer(AwqQuantizer), []
    for ratio in (r / 20 for r in range(20)):  # AutoAWQ's candidates (duo scaling)
        s = (x_mean.pow(ratio) / (w_mean.pow(1 - ratio) + 1e-4)).clamp(min=1e-4)
        s = s / (s.max() * s.min()).sqrt()
        q_w = quantizer.pseudo_quantize_tensor(before * s)[0] / s
        errors.append((float((x @ q_w.T - x @ before.T).pow(2).sum()), s))
    assert torch.allclose(scales, min(errors, key=lambda e: e[0])[1])


def test_the_cpu_clip_search_by_matrix_products_chooses_what_autoawqs_own_chooses():
    """``cpu_quantizer`` computes AutoAWQ's clipping search with matrix
    products instead of broadcast products: the same thresholds, with output channels in batches of
    64 and of 256, on every token and on a sample of them (over 1,024 tokens)."""
    import torch
    from awq.quantize.quantizer import AwqQuantizer

    from thinkbias.models.awq import cpu_quantizer

    def search(cls, w, x):
        return bare_quantizer(cls)._compute_best_clip(w, x)

    torch.manual_seed(0)
    for out_f, in_f, tokens in ((64, 384, 1100), (256, 128, 200)):
        w, x = torch.randn(out_f, in_f), torch.randn(tokens, in_f) * torch.rand(in_f) * 3
        ours, theirs = search(cpu_quantizer(), w, x), search(AwqQuantizer, w, x)
        assert ours.shape == theirs.shape == (out_f, in_f // 64, 1)
        assert torch.equal(ours, theirs)
