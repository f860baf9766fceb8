"""Depth probe of position bias: P(A..D) after a forced answer cue at K depths of each reasoning trace.

The fairness study's CDPG idea applied to the position study. For a record of a ``reasoning`` or
``cot`` configuration, the trace is what the model reasoned before answering:
- ``reasoning``: the thinking trace (``Generation.thinking``; engine trace ``thinking``), cue
  ``"\\n" + think_close + "\\n\\nThe answer is ("`` (the think block force-closed, then the answer form
  the prompt asks for);
- ``cot``: the visible response (``Generation.text``; engine trace ``text``), cue ``"\\n\\nThe answer is ("``.

At depth f the probe reads the next-token distribution after ``prompt + prefill + trace[:cut] + cue``
with ``cut = floor(f * n + 1/2)`` of the trace's n tokens (``fraction_cuts``, the CDPG cut), over the
candidates ``LETTERS`` (A-D with their token variants; renormalised, the rest is ``outside_mass``).
Depth 0 is the prompt alone, depth 1 the whole trace.

Both go through ``Engine.generate_and_probe_many`` (``generate_and_probe_depths``): the generation
job generates and probes in one pass, on the KV cells generation left (only the cue tokens of each
depth are evaluated), and the generation is cached under its unchanged request key. A generation
already cached without these probes is probed from its stored trace (one prefill of prompt + trace,
then the cues): the engine's fall-back, which ``position_depth_probe`` relies on to build Table 5
from the generations of a run made with the probe off.
"""

from __future__ import annotations

import logging
from typing import Sequence

import pandas as pd

from thinkbias.llm.run import Progress
from thinkbias.llm.trace_cuts import fraction_cuts
from thinkbias.llm.types import LETTERS, CandidateScores, Generation, Request
from thinkbias.position.extract import OPTION_LETTERS

ANSWER_CUE = "The answer is ("
PROBED_MODES = ("reasoning", "cot")
RECORD_KEYS = ("question_id", "benchmark", "item_id", "permutation", "model", "mode", "correct_position")
PROBE_COLUMNS = (
    RECORD_KEYS + ("depth", "cut_tokens", "trace_tokens") + tuple(f"p_{c}" for c in OPTION_LETTERS) + ("outside_mass",)
)


def depth_cue(mode: str, think_close: str) -> str:
    """The forced answer cue of a mode: the think block closed first in ``reasoning`` mode."""
    if mode not in PROBED_MODES:
        raise ValueError(
            f"depth probe: mode '{mode}' has no reasoning trace to probe (modes: {', '.join(PROBED_MODES)})"
        )
    close = "\n" + think_close if mode == "reasoning" and think_close else ""
    return close + "\n\n" + ANSWER_CUE


def check_depths(depths: Sequence[float]) -> list[float]:
    """Depths as floats in [0, 1], distinct and increasing (a bad list stops with its values)."""
    out = [float(d) for d in depths]
    bad = [d for d in out if not 0.0 <= d <= 1.0]
    if not out or bad or sorted(set(out)) != out:
        raise ValueError(
            f"position.depth_probe.depths must be distinct increasing fractions in [0, 1]; got {list(depths)}"
        )
    return out


def depth_trace(mode: str) -> str:
    """The engine trace a mode's probe cuts: ``thinking`` in reasoning mode, ``text`` in CoT mode."""
    depth_cue(mode, "")  # stops on a mode without a trace
    return "thinking" if mode == "reasoning" else "text"


def generate_and_probe_depths(
    engine,
    requests: Sequence[Request],
    mode: str,
    think_close: str,
    depths: Sequence[float],
    logger: logging.Logger | None = None,
    label: str = "generate+probe",
) -> list[tuple[Generation, list[CandidateScores]]]:
    """Each request generated (or taken from the cache) and probed at every depth, in one pass
    (``Engine.generate_and_probe_many`` on the mode's trace and cue); results follow ``requests``.
    Progress and the closing line (the job's metrics: generated and probe tokens) go to ``logger``."""
    depths = check_depths(depths)
    progress = Progress(len(requests), logger, label=label, engine=engine)
    if logger:
        logger.info(f"{label}: {len(requests)} requests on model {engine.spec.id}, {len(depths)} depths each")
    pairs = engine.generate_and_probe_many(
        list(requests),
        depths,
        depth_cue(mode, think_close),
        LETTERS,
        on_result=lambda i, g: progress.update(g),
        trace=depth_trace(mode),
    )
    progress.finish()
    return pairs


def depth_probe_table(
    engine,
    generations: pd.DataFrame,
    pairs: Sequence[tuple[Generation, list[CandidateScores]]],
    mode: str,
    depths: Sequence[float],
) -> pd.DataFrame:
    """One row per (record, depth) with P(A..D) after the cue (columns ``PROBE_COLUMNS``).

    ``generations`` is the generations table of the records (``generations_table``; same rows and
    order as ``pairs``). ``trace_tokens`` counts the stored trace's tokens, ``cut_tokens`` the cut of
    each depth among them."""
    depths = check_depths(depths)
    rows = generations.reset_index(drop=True)
    if len(rows) != len(pairs):
        raise ValueError(f"depth probe: {len(pairs)} probed records for {len(rows)} generations")
    out = []
    for i, (gen, per_depth) in enumerate(pairs):
        n = engine.count_tokens(gen.thinking if mode == "reasoning" else gen.text)
        record = {k: rows.at[i, k] for k in RECORD_KEYS}
        for depth, cut, sc in zip(depths, fraction_cuts(depths, n), per_depth, strict=True):
            out.append(
                {
                    **record,
                    "depth": depth,
                    "cut_tokens": cut,
                    "trace_tokens": n,
                    **{f"p_{c}": float(sc.probs[c]) for c in OPTION_LETTERS},
                    "outside_mass": float(sc.outside_mass),
                }
            )
    return pd.DataFrame(out, columns=list(PROBE_COLUMNS))


def empty_probe_table() -> pd.DataFrame:
    """The probe table of a generation shard that was not probed."""
    return pd.DataFrame(columns=list(PROBE_COLUMNS))


def probe_depths(
    engine,
    requests: Sequence[Request],
    generations: pd.DataFrame,
    mode: str,
    think_close: str,
    depths: Sequence[float],
    logger: logging.Logger | None = None,
) -> pd.DataFrame:
    """The depth probes of generations made earlier (``position_depth_probe``): ``depth_probe_table``
    of ``generate_and_probe_depths`` on the requests that made ``generations`` (same rows, same order).

    A generation the engine returns that differs from the table's text (another model, weights or
    cache) stops with the number of records and the first question ids.
    """
    if len(requests) != len(generations):
        raise ValueError(f"depth probe: {len(requests)} requests for {len(generations)} generations")
    pairs = generate_and_probe_depths(engine, requests, mode, think_close, depths, logger, label="depth probe")
    rows = generations.reset_index(drop=True)
    differ = [i for i, (gen, _) in enumerate(pairs) if gen.text != rows.at[i, "text"]]
    if differ:
        first = ", ".join(f"{rows.at[i, 'question_id']}/{rows.at[i, 'permutation']}" for i in differ[:5])
        raise ValueError(
            f"depth probe: the engine's generation differs from the generations table for "
            f"{len(differ)} of {len(rows)} records (first: {first}); the table was not made "
            f"by this model's cache"
        )
    return depth_probe_table(engine, rows, pairs, mode, depths)
