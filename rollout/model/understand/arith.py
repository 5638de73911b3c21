# Owns the arithmetic the default model reads out of a message and does itself: a binary
# operation in words or symbols ("6 times 7", "12 + 30", "subtract 5 from 12", "15% of 200",
# "2 to the power of 10"), a sum or product of a list, a square root. Exact (fractions), with
# the result written as a person would (42, 3.5, 0.33). Pure.
from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Final

import attrs

__all__ = ["Arithmetic", "arithmetic_of", "number_text"]

_N: Final = r"(-?\d+(?:,\d{3})*(?:\.\d+)?)"
_WORD_OPS: Final = (
    ("multiply", rf"\b{_N}\s*(?:\*|x|\u00d7|times|multiplied by)\s*{_N}"),
    ("multiply", rf"\bmultiply\s+{_N}\s+(?:by|and|with)\s+{_N}"),
    ("multiply", rf"\bproduct of\s+{_N}\s+and\s+{_N}"),
    ("add", rf"\b{_N}\s*(?:\+|plus|added to)\s*{_N}"),
    ("add", rf"\b(?:add|sum of)\s+{_N}\s+(?:and|to|plus)\s+{_N}"),
    ("subtract", rf"\b{_N}(?:\s+[-\u2212]\s+|\s*\u2212\s*|\s+minus\s+|\s+less\s+){_N}"),
    ("subtract_from", rf"\bsubtract\s+{_N}\s+from\s+{_N}"),
    ("subtract", rf"\bdifference between\s+{_N}\s+and\s+{_N}"),
    ("divide", rf"\b{_N}\s*(?:/|\u00f7|divided by|over)\s*{_N}"),
    ("divide", rf"\bdivide\s+{_N}\s+by\s+{_N}"),
    ("percent", rf"\b{_N}\s*(?:%|percent)\s+of\s+{_N}"),
    ("power", rf"\b{_N}\s*(?:\^|\*\*|to the power of|raised to)\s*{_N}"),
)
_SQRT: Final = re.compile(rf"\bsquare root of\s+{_N}|\bsqrt\(?\s*{_N}", re.I)
_SUM_LIST: Final = re.compile(
    r"\b(?:sum|total|add up|add)\s+(?:of\s+)?((?:-?\d+(?:\.\d+)?[, ]+(?:and\s+)?)+-?\d+(?:\.\d+)?)",
    re.I,
)
_SYMBOL: Final = {
    "multiply": "times",
    "add": "plus",
    "subtract": "minus",
    "divide": "divided by",
    "percent": "percent of",
    "power": "to the power of",
}


@attrs.frozen
class Arithmetic:
    op: str  # multiply, add, subtract, divide, percent, power, sqrt, sum
    operands: tuple[float, ...]
    result: Fraction | float | None  # None: undefined (division by zero)

    @property
    def words(self) -> str:
        """The operation as a sentence's subject: "6 times 7"."""
        if self.op == "sqrt":
            return f"The square root of {number_text(self.operands[0])}"
        if self.op == "sum":
            *head, last = (number_text(n) for n in self.operands)
            return "The sum of " + ", ".join(head) + " and " + last
        a, b = self.operands
        return f"{number_text(a)} {_SYMBOL[self.op]} {number_text(b)}"

    @property
    def result_text(self) -> str:
        return "undefined" if self.result is None else number_text(self.result)

    def sentence(self) -> str:
        if self.result is None:
            return f"{self.words} is undefined: you cannot divide by zero."
        text = self.words
        return f"{text[0].upper()}{text[1:]} is {self.result_text}."


def number_text(value: Fraction | float) -> str:
    """A number as a person writes it: whole numbers without a point, others to at most
    four decimals."""
    if isinstance(value, Fraction) and value.denominator == 1:
        return f"{value.numerator:,}" if abs(value.numerator) >= 10_000 else str(value.numerator)
    v = float(value)
    if v.is_integer():
        return f"{int(v):,}" if abs(v) >= 10_000 else str(int(v))
    return f"{v:.4f}".rstrip("0").rstrip(".")


def _num(text: str) -> Fraction:
    return Fraction(text.replace(",", ""))


def _compute(op: str, a: Fraction, b: Fraction) -> Fraction | float | None:
    if op == "multiply":
        return a * b
    if op == "add":
        return a + b
    if op == "subtract":
        return a - b
    if op == "divide":
        return None if b == 0 else a / b
    if op == "percent":
        return a * b / 100
    if b.denominator == 1 and abs(b) <= 64 and abs(a) < 10**6:  # power
        return a ** int(b)
    return float(a) ** float(b)


def arithmetic_of(text: str) -> Arithmetic | None:
    """The arithmetic a message asks for, computed; None when it asks for none."""
    m = _SQRT.search(text)
    if m:
        x = _num(m.group(1) or m.group(2))
        root = math.isqrt(int(x)) if x.denominator == 1 and x >= 0 else None
        exact = Fraction(root) if root is not None and root * root == x else None
        return Arithmetic("sqrt", (float(x),), exact if exact is not None else math.sqrt(abs(x)))
    for op, pattern in _WORD_OPS:
        m = re.search(pattern, text, re.I)
        if m:
            a, b = _num(m.group(1)), _num(m.group(2))
            if op == "subtract_from":
                op, a, b = "subtract", b, a
            return Arithmetic(op, (float(a), float(b)), _compute(op, a, b))
    m = _SUM_LIST.search(text)
    if m:
        values = [_num(v) for v in re.findall(r"-?\d+(?:\.\d+)?", m.group(1))]
        if len(values) >= 2:
            return Arithmetic("sum", tuple(float(v) for v in values), sum(values, Fraction(0)))
    return None
