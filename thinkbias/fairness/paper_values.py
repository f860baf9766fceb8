"""Paper values as the paper prints them: "89%", "≈ 5.7×", "0.054", "1,430", "≤ 0.035", "9/9".

A value in resources/paper/fairness.yaml carries ``printed`` (the paper's text) beside ``value`` (the
number in the unit the workflow measures, a percentage as a fraction). :func:`parse_printed` reads
the text back to its number, its unit and how many digits the paper gave, so the report shows the
paper's number with its own precision (never "0.890" for "89%", or "5.700" for "≈ 5.7×") and the
reproduced number in the same unit with one digit more.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

_PRINTED = re.compile(
    r"^(?P<rel>≤|<=|<|≥|>=|>)?\s*(?P<approx>≈|~)?\s*(?P<num>[+\-−]?\d[\d,]*(?:\.\d+)?)(?P<of>/\d+)?\s*(?P<unit>%|×|x)?$"
)


@dataclass(frozen=True)
class PrintedValue:
    """A number as the paper prints it."""

    text: str
    value: float  # in the measured unit: "89%" -> 0.89, "≈ 5.7×" -> 5.7
    decimals: int  # digits after the point in the printed unit ("89%" -> 0, "48.4%" -> 1)
    unit: str  # "%", "×" or ""
    approximate: bool  # printed with "≈" or "~"
    thousands: bool  # printed with a thousands separator ("1,430")


def parse_printed(text: str) -> PrintedValue:
    """Read a printed paper value; raises ``ValueError`` on text it does not understand."""
    m = _PRINTED.match(str(text).strip())
    if not m:
        raise ValueError(f"cannot read the printed paper value {text!r} (expected e.g. 89%, ≈ 5.7×, 0.054, 1,430)")
    num = m.group("num").replace("−", "-")
    decimals = len(num.split(".")[1]) if "." in num else 0
    unit = {"x": "×"}.get(m.group("unit") or "", m.group("unit") or "")
    number = float(num.replace(",", ""))
    return PrintedValue(
        text=str(text),
        value=number / 100 if unit == "%" else number,
        decimals=decimals,
        unit=unit,
        approximate=bool(m.group("approx")),
        thousands="," in num,
    )


def agrees(printed: PrintedValue, value: float) -> bool:
    """Whether a stored numeric ``value`` is what the printed text says (to the printed digits)."""
    scale = 100.0 if printed.unit == "%" else 1.0
    return math.isclose(printed.value * scale, float(value) * scale, abs_tol=0.5 * 10 ** -(printed.decimals + 3))


def format_like(value: float, printed: PrintedValue, extra_digits: int = 1) -> str:
    """``value`` (in the measured unit) in the printed value's unit with ``extra_digits`` more
    decimals; whole numbers against a whole-number paper value stay whole. Empty for NaN."""
    if value is None or math.isnan(value):
        return ""
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    shown = value * 100 if printed.unit == "%" else value
    if printed.decimals == 0 and float(shown).is_integer() and printed.unit != "%":
        digits = 0
    else:
        digits = printed.decimals + extra_digits
    number = f"{shown:,.{digits}f}" if printed.thousands else f"{shown:.{digits}f}"
    return number + printed.unit


def format_difference(diff: float, printed: PrintedValue, extra_digits: int = 1) -> str:
    """A reproduced-minus-paper difference in the printed unit: percentage points for a percentage,
    signed, with ``extra_digits`` more decimals than the paper. Empty for NaN."""
    if diff is None or math.isnan(diff):
        return ""
    if printed.unit == "%":
        return f"{100 * diff:+.{printed.decimals + extra_digits}f} pp"
    if printed.decimals == 0 and float(diff).is_integer():
        return f"{diff:+.0f}"
    return f"{diff:+.{printed.decimals + extra_digits}f}"
