"""Depth probe of position bias: P(A..D) after a forced answer cue at K depths of each reasoning trace.

The fairness study's CDPG idea applied to the position study. For a record of a ``reasoning`` or
``cot`` configuration, the trace is what the model reasoned before answering:
- ``reasoning``: the thinking trace (``Generation.thinking``), probed through
  ``Engine.generate_and_probe_many`` with the cue ``"\\n" + think_close + "\\n\\nThe answer is ("``
  (the think block force-closed, then the answer form the prompt asks for);
- ``cot``: the visible response (``Generation.text``: there is no thinking), probed through
  ``Engine.probe`` with the cue ``"\\n\\nThe answer is ("``.

At depth f the probe reads the next-token distribution after ``prompt + prefill + trace[:cut] + cue``
with ``cut = floor(f * n + 1/2)`` of the trace's n tokens (``fraction_cuts``, the CDPG cut), over the
candidates ``LETTERS`` (A-D with their token variants; renormalised, the rest is ``outside_mass``).
Depth 0 is the prompt alone, depth 1 the whole trace.

The requests are the generation job's own (``build_requests``), so the engine finds each generation
in the request cache under its unchanged key: the probe job generates nothing and pays one prefill of
prompt + trace per record plus the cue tokens of each depth (KV reused across depths, deepest first).
"""

from __future__ import annotations

import logging
from typing import Sequence

import pandas as pd

from thinkbias.llm.base import fraction_cuts
from thinkbias.llm.run import Progress
from thinkbias.llm.types import LETTERS, Request
from thinkbias.position.extract import OPTION_LETTERS

ANSWER_CUE = "The answer is ("
PROBED_MODES = ("reasoning", "cot")
RECORD_KEYS = ("question_id", "benchmark", "item_id", "permutation", "model", "mode", "correct_position")
PROBE_COLUMNS = RECORD_KEYS + ("depth", "cut_tokens", "trace_tokens") + tuple(
    f"p_{c}" for c in OPTION_LETTERS) + ("outside_mass",)


def depth_cue(mode: str, think_close: str) -> str:
    """The forced answer cue of a mode: the think block closed first in ``reasoning`` mode."""
    if mode not in PROBED_MODES:
        raise ValueError(f"depth probe: mode '{mode}' has no reasoning trace to probe (modes: {', '.join(PROBED_MODES)})")
    close = "\n" + think_close if mode == "reasoning" and think_close else ""
    return close + "\n\n" + ANSWER_CUE


def check_depths(depths: Sequence[float]) -> list[float]:
    """Depths as floats in [0, 1], distinct and increasing (a bad list stops with its values)."""
    out = [float(d) for d in depths]
    bad = [d for d in out if not 0.0 <= d <= 1.0]
    if not out or bad or sorted(set(out)) != out:
        raise ValueError(f"position.depth_probe.depths must be distinct increasing fractions in [0, 1]; got {list(depths)}")
    return out


def probe_depths(engine, requests: Sequence[Request], generations: pd.DataFrame, mode: str, think_close: str,
                 depths: Sequence[float], logger: logging.Logger | None = None) -> pd.DataFrame:
    """One row per (record, depth) with P(A..D) after the cue (columns ``PROBE_COLUMNS``).

    ``generations`` is the generations table of ``requests`` (same rows, same order). A generation
    the engine returns that differs from the table's text (another model, weights or cache) stops
    with the number of records and the first question ids. Progress and the closing line (the job's
    metrics: generated and probe tokens) go to ``logger``.
    """
    depths = check_depths(depths)
    if len(requests) != len(generations):
        raise ValueError(f"depth probe: {len(requests)} requests for {len(generations)} generations")
    cue = depth_cue(mode, think_close)
    rows = generations.reset_index(drop=True)
    progress = Progress(len(requests), logger, label="depth probe", engine=engine)
    if logger:
        logger.info(f"depth probe: {len(requests)} traces on model {engine.spec.id}, {len(depths)} depths each")
    if mode == "reasoning":
        pairs = engine.generate_and_probe_many(list(requests), depths, cue, LETTERS,
                                               on_result=lambda i, g: progress.update(g))
    else:
        gens = engine.generate(list(requests))  # cache hits: the generation job's results
        pairs = []
        for req, gen in zip(requests, gens):
            pairs.append((gen, engine.probe(req, gen.text, fraction_cuts(depths, engine.count_tokens(gen.text)),
                                            cue, LETTERS)))
            progress.update(gen)
    progress.finish()
    differ = [i for i, (gen, _) in enumerate(pairs) if gen.text != rows.at[i, "text"]]
    if differ:
        first = ", ".join(f"{rows.at[i, 'question_id']}/{rows.at[i, 'permutation']}" for i in differ[:5])
        raise ValueError(f"depth probe: the engine's generation differs from the generations table for "
                         f"{len(differ)} of {len(rows)} records (first: {first}); the table was not made "
                         f"by this model's cache")
    out = []
    for i, (gen, per_depth) in enumerate(pairs):
        n = engine.count_tokens(gen.thinking if mode == "reasoning" else gen.text)
        record = {k: rows.at[i, k] for k in RECORD_KEYS}
        for depth, cut, sc in zip(depths, fraction_cuts(depths, n), per_depth, strict=True):
            out.append({**record, "depth": depth, "cut_tokens": cut, "trace_tokens": n,
                        **{f"p_{c}": float(sc.probs[c]) for c in OPTION_LETTERS}, "outside_mass": float(sc.outside_mass)})
    return pd.DataFrame(out, columns=list(PROBE_COLUMNS))
