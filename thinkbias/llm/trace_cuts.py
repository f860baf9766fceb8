"""Where a probe cuts a trace: the token cut points of depth fractions, and the text a generation
wrote before its thinking trace."""

from __future__ import annotations

import math
from typing import Sequence

from thinkbias.llm.thinking import thinking_char_span


def fraction_cuts(cut_fractions: Sequence[float], n: int) -> list[int]:
    """Token cut points ``floor(f * n + 1/2)`` (round half up, clipped to [0, n]) for fractions of a
    trace of n tokens.

    Half up, not Python's half-to-even ``round``, so that ``f = k/K`` gives exactly the CDPG cut
    ``floor(k*n/K + 1/2)`` of the fairness study; the 1e-9 absorbs the float error of ``k/K * n``
    at an exact tie (a non-tie is at least 1/K away from it).
    """
    return [min(n, max(0, int(math.floor(f * n + 0.5 + 1e-9)))) for f in cut_fractions]


def trace_lead(text: str, think_open: str, think_close: str, opened: bool) -> str:
    """The part of a generated ``text`` before its thinking trace starts: the model's own open tag
    (when the prompt did not open the trace) and the newlines ``split_thinking`` strips from the
    trace. ``CachedEngine.stored_trace_probe`` puts it back before a stored trace."""
    span = thinking_char_span(text, think_open, think_close, opened)
    return "" if span is None else text[: span[0]]
