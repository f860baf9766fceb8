"""The token stream of a llama.cpp generation, shared by the sequential path (``thinkbias.llm.llamacpp``)
and the batched one (``thinkbias.llm.llamacpp_batch``), so both cut a text at its stop strings alike."""

from __future__ import annotations

from typing import Sequence


class TokenStream:
    """The text of one generation as its tokens arrive: the tokens, their bytes, and the stop
    strings (a stop string cuts the text where it first occurs; the tail is searched, not the
    whole text, so a long generation costs O(1) per token)."""

    def __init__(self, stop: Sequence[str]):
        self.tokens: list[int] = []
        self.pieces: list[bytes] = []
        self.buf = bytearray()
        self.stops = [s for s in stop if s]
        self.longest = max((len(s) for s in self.stops), default=0)
        self.text: str | None = None  # set when a stop string ended the text

    def add(self, token: int, piece: bytes) -> bool:
        """Append one sampled token; True when a stop string now ends the text."""
        self.tokens.append(token)
        self.pieces.append(piece)
        self.buf += piece
        if self.stops:
            tail_start = max(0, len(self.buf) - len(piece) - 4 * self.longest - 8)
            tail = bytes(self.buf[tail_start:]).decode("utf-8", errors="ignore")
            if any(s in tail for s in self.stops):
                full = bytes(self.buf).decode("utf-8", errors="ignore")
                cut = min(full.find(s) for s in self.stops if s in full)
                self.text = full[:cut]
                return True
        return False

    def final_text(self) -> str:
        """The generated text (cut at the stop string, if one ended it)."""
        return bytes(self.buf).decode("utf-8", errors="ignore") if self.text is None else self.text
