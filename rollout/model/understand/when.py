# Owns the days and times the default model reads out of a message: ISO and US dates, "March 3,
# 2027", "the 5th of May", "today", "tomorrow", "next Friday" (counted from REFERENCE_DAY: the
# model has no clock), and clock times ("3pm", "9:30", "noon") in 24-hour form. Each finder
# records the spans it read, so no later finder reads them as plain numbers. Pure.
from __future__ import annotations

import datetime
import re
from typing import Final

from rollout.model.understand import lexicon as lx

__all__ = ["REFERENCE_DAY", "dates_of", "times_of"]

#: The date relative dates are counted from when the conversation names none (the model has
#: no clock: a fixed day keeps it deterministic).
REFERENCE_DAY: Final = datetime.date(2026, 1, 5)

_ISO_DATE: Final = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_SLASH_DATE: Final = re.compile(r"\b(\d{1,2})/(\d{1,2})/(\d{4})\b")
_MONTH: Final = "|".join(m[:3] + (m[3:] and f"(?:{m[3:]})?") for m in lx.MONTHS)
_NAMED_DATE: Final = re.compile(
    rf"\b(?:({_MONTH})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?|(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?"
    rf"({_MONTH}))\b(?:,?\s+(\d{{4}}))?",
    re.I,
)
_RELATIVE: Final = re.compile(
    r"\b(today|tonight|tomorrow|yesterday|(?:next|this|on)\s+(" + "|".join(lx.WEEKDAYS) + r"))\b",
    re.I,
)
_TIME: Final = re.compile(
    r"\b(?:at\s+)?(\d{1,2})(?::(\d{2}))?\s*(am|pm|a\.m\.|p\.m\.)|\b(\d{1,2}):(\d{2})\b|\b(noon|midnight)\b",
    re.I,
)


def _month(name: str) -> int:
    return next(i for i, m in enumerate(lx.MONTHS, 1) if m.startswith(name[:3].lower()))


def dates_of(text: str, taken: list[tuple[int, int]]) -> list[datetime.date]:
    found: list[tuple[int, datetime.date]] = []
    today = REFERENCE_DAY
    for m in _ISO_DATE.finditer(text):
        try:
            found.append((m.start(), datetime.date(*map(int, m.groups()))))
            taken.append(m.span())
        except ValueError:
            pass
    for m in _SLASH_DATE.finditer(text):
        month, day, year = map(int, m.groups())
        try:
            found.append((m.start(), datetime.date(year, month, day)))
            taken.append(m.span())
        except ValueError:
            pass
    for m in _NAMED_DATE.finditer(text):
        month = _month(m.group(1) or m.group(4))
        day = int(m.group(2) or m.group(3))
        year = int(m.group(5)) if m.group(5) else today.year
        try:
            when = datetime.date(year, month, day)
        except ValueError:
            continue
        if not m.group(5) and when < today:
            when = when.replace(year=today.year + 1)
        found.append((m.start(), when))
        taken.append(m.span())
    for m in _RELATIVE.finditer(text):
        word = m.group(1).lower()
        if word in ("today", "tonight"):
            when = today
        elif word == "tomorrow":
            when = today + datetime.timedelta(days=1)
        elif word == "yesterday":
            when = today - datetime.timedelta(days=1)
        else:
            target = lx.WEEKDAYS.index(m.group(2).lower())
            ahead = (target - today.weekday()) % 7 or 7
            when = today + datetime.timedelta(days=ahead)
        found.append((m.start(), when))
    return [d for _, d in sorted(found, key=lambda f: f[0])]


def times_of(text: str, taken: list[tuple[int, int]]) -> list[str]:
    out: list[str] = []
    for m in _TIME.finditer(text):
        if any(a <= m.start() < b for a, b in taken):
            continue
        if m.group(6):
            out.append("12:00" if m.group(6).lower() == "noon" else "00:00")
        elif m.group(3):
            hour, minute = int(m.group(1)), int(m.group(2) or 0)
            pm = m.group(3).lower().startswith("p")
            hour = hour % 12 + (12 if pm else 0)
            out.append(f"{hour:02d}:{minute:02d}")
        else:
            hour, minute = int(m.group(4)), int(m.group(5))
            if hour > 23 or minute > 59:
                continue
            out.append(f"{hour:02d}:{minute:02d}")
        taken.append(m.span())
    return out
