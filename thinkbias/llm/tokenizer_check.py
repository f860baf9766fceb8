"""The load-time check that a model's tokenizer gives back the text it was given.

A tokenizer that silently changes text (a byte-level pre-tokenizer replaced by one that drops
spaces, a normalizer that folds Unicode) shifts every prompt the model sees and every probe cut,
with nothing failing. Each engine therefore encodes a fixed text (spaces, runs of spaces, digits,
the model's think tags, punctuation, non-ASCII letters and symbols) and decodes it again at load,
and stops, naming the model, when the text comes back changed.
"""

from __future__ import annotations

from typing import Callable

ROUND_TRIP_BODY = (
    "The applicant, aged 42, earns $51,300 a year;  two spaces, then a tab\there.\n"
    "Zoë paid 3.5 € in Zürich — naïve café, 東京, Ελλάδα, ½ ≤ 0.75?\nAnswer: (B) Yes"
)


class TokenizerRoundTripError(RuntimeError):
    """A model's tokenizer changed text on its way through encode and decode."""


def round_trip_text(think_open: str = "", think_close: str = "") -> str:
    """The fixed text every engine load round-trips, with the model's think tags in it."""
    tags = f"{think_open.strip()} step one {think_close.strip()}" if think_open or think_close else ""
    return f"{ROUND_TRIP_BODY}\n{tags}".rstrip()


def first_difference(expected: str, got: str) -> int:
    """Index of the first character where ``got`` differs from ``expected`` (the shorter length when
    one is a prefix of the other)."""
    for i, (a, b) in enumerate(zip(expected, got)):
        if a != b:
            return i
    return min(len(expected), len(got))


def check_round_trip(
    model_id: str,
    encode: Callable[[str], list[int]],
    decode: Callable[[list[int]], str],
    think_open: str = "",
    think_close: str = "",
) -> None:
    """Encode and decode :func:`round_trip_text`; raise :class:`TokenizerRoundTripError` naming the
    model and the first changed characters when the text comes back different."""
    text = round_trip_text(think_open, think_close)
    got = decode(encode(text))
    if got == text:
        return
    at = first_difference(text, got)
    raise TokenizerRoundTripError(
        f"model '{model_id}': its tokenizer does not give back the text it encodes (first difference at "
        f"character {at}: expected {text[max(0, at - 10) : at + 20]!r}, got {got[max(0, at - 10) : at + 20]!r}). "
        "Prompts and probe cuts would be silently wrong. Load the tokenizer the model was trained with "
        "(registry extra.tokenizer, or the snapshot's tokenizer files), or pin a tokenizers/transformers "
        "version that reads it correctly."
    )
