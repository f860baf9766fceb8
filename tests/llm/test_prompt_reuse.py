"""A generation keeps the KV cells of the prompt prefix it shares with the one before it, and its
numbers stay bit-for-bit those of a fresh prefill (llama.cpp, the embedded model)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from thinkbias.llm import open_engine
from thinkbias.llm.types import Request, Sampling

pytestmark = pytest.mark.slow

STEM = "Question: which of these is a mammal?"
OPTIONS = ["a whale", "a trout", "a crow", "a frog"]


def small_batch_engine(spec, n_batch: int = 4):
    """An engine whose prefill steps are ``n_batch`` tokens, so that short prompts cross step borders."""
    return open_engine(replace(spec, extra={**spec.extra, "n_batch": n_batch}), None, n_threads=1)


def test_kept_prefixes_give_a_fresh_prefills_logits_at_every_step_border(spec):
    warm, cold = small_batch_engine(spec), small_batch_engine(spec)
    stem = warm.tokenize_prompt(warm.render(Request.chat(STEM)))
    filler = warm.tokenize_text(" one two three four five six seven eight nine ten eleven twelve", special=False)
    # rests of 1 to 6 tokens after the stem, whole prompts of every length modulo the step
    prompts = [stem[:-k] + filler[:r] for k in (1, 2) for r in range(1, 7)]
    kept = backed_off = fresh = 0
    for tokens in prompts:
        before = warm.stats.reused_prompt_tokens
        cells = warm._shared_prefix(tokens, warm._exact)
        warm.eval_prompt(tokens)
        reused = warm.stats.reused_prompt_tokens - before
        kept += reused > 0
        backed_off += 0 < reused < cells
        fresh += reused == 0
        cold.eval_fresh(tokens)
        assert np.array_equal(warm.last_logits(), cold.last_logits()), (len(tokens), reused)
    assert kept >= 6 and backed_off > 0 and fresh > 0  # every branch of eval_prompt ran
    for e in (warm, cold):
        e.close()


def test_generations_in_any_order_equal_each_generated_alone(spec, fresh_engine):
    reqs = [
        Request.chat(f"{STEM} {' '.join(f'({c}) {o}' for c, o in zip('ABCD', OPTIONS[k:] + OPTIONS[:k]))}",
                     sampling=Sampling(max_tokens=6))
        for k in range(4)
    ]  # fmt: skip
    eng = fresh_engine()
    together = eng.generate(reqs[::-1])[::-1]
    alone = [fresh_engine().generate([r])[0] for r in reqs]
    assert [g.text for g in together] == [g.text for g in alone]
    total = sum(g.prompt_tokens for g in alone)
    assert eng.stats.reused_prompt_tokens > total // 4  # the stem was evaluated once, not four times
    assert eng.stats.prompt_tokens + eng.stats.reused_prompt_tokens == total
