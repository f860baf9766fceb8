"""Yes/No answer parsing with refusal detection (paper §4.1: pairs are kept only if every answer parses).

Rule: in the answer text (what follows the closed think block), the first standalone word "yes" or
"no" (any case) is the answer. Before that, if the text contains one of :data:`REFUSAL_PHRASES`
(case-insensitive) and no Yes/No word, the status is ``refusal``; otherwise ``unparsed``.
"""

from __future__ import annotations

import re

STATUSES = ("ok", "refusal", "unparsed")

# Documented phrase list: a case-insensitive substring match marks an answer as a refusal.
REFUSAL_PHRASES: tuple[str, ...] = (
    "i cannot",
    "i can't",
    "i can not",
    "i am unable",
    "i'm unable",
    "i won't",
    "i will not",
    "unable to determine",
    "cannot determine",
    "can't determine",
    "cannot predict",
    "can't predict",
    "not possible to determine",
    "not possible to predict",
    "insufficient information",
    "not enough information",
    "i'm sorry",
    "i am sorry",
    "as an ai",
)

_YES_NO = re.compile(r"(?<![A-Za-z])(yes|no)(?![A-Za-z])", re.IGNORECASE)


def parse_yes_no(answer: str | None) -> tuple[str | None, str]:
    """Return (answer, status): ("Yes" | "No", "ok"), (None, "refusal") or (None, "unparsed")."""
    text = answer or ""
    m = _YES_NO.search(text)
    if m:
        return ("Yes" if m.group(1).lower() == "yes" else "No"), "ok"
    low = text.lower()
    if any(p in low for p in REFUSAL_PHRASES):
        return None, "refusal"
    return None, "unparsed"
