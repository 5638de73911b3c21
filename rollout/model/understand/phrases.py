# Owns the values read out of a message's own words for one property: the sentiment it
# reads, what a number counts ("3 days"), its words, a phrase in it, the arithmetic as an
# expression, the text to translate, a path, an e-mail's subject, an event's title and a
# search query. Pure; the readings of a text are cached (a rollout's steps read one prompt).
from __future__ import annotations

import functools
import re
from typing import Final

from rollout.model.understand import Understanding
from rollout.model.understand.arith import number_text

_POSITIVE: Final = re.compile(
    r"\b(love|loved|great|amazing|excellent|awesome|fantastic|wonderful|good|happy|best|"
    r"perfect|enjoy(ed)?|like|recommend)\b"
)
_NEGATIVE: Final = re.compile(
    r"\b(hate|hated|terrible|awful|bad|worst|poor|broken|disappointed|disappointing|angry|"
    r"horrible|useless|refund|never again)\b|\bnot (good|great|happy)\b"
)
MOODS: Final = {
    "positive": ("positive", "pos", "happy", "good"),
    "negative": ("negative", "neg", "unhappy", "bad"),
    "neutral": ("neutral", "mixed", "none"),
}


_COUNTED: Final = re.compile(r"\b(\d+)\s+([A-Za-z]+)")


@functools.lru_cache(maxsize=256)
def counted(text: str) -> dict[str, str]:
    """The words a number counts ("3 days": days -> 3)."""
    return {w.lower(): n for n, w in _COUNTED.findall(text)}


@functools.lru_cache(maxsize=256)
def said_words(text: str) -> frozenset[str]:
    return frozenset(re.findall(r"[a-z0-9]+(?:[-_][a-z0-9]+)*", text))


def has_phrase(text: str, phrase: str) -> bool:
    at = text.find(phrase)
    while at >= 0:
        end = at + len(phrase)
        if (at == 0 or not text[at - 1].isalnum()) and (
            end == len(text) or not text[end].isalnum()
        ):
            return True
        at = text.find(phrase, at + 1)
    return False


def sentiment(text: str) -> str:
    good, bad = len(_POSITIVE.findall(text)), len(_NEGATIVE.findall(text))
    return "positive" if good > bad else "negative" if bad > good else "neutral"


def expression(u: Understanding) -> str:
    a = u.arithmetic
    assert a is not None
    symbols = {"multiply": "*", "add": "+", "subtract": "-", "divide": "/", "power": "**"}
    if a.op in symbols and len(a.operands) == 2:
        x, y = (number_text(v) for v in a.operands)
        return f"{x} {symbols[a.op]} {y}"
    if a.op == "percent":
        x, y = (number_text(v) for v in a.operands)
        return f"{x} / 100 * {y}"
    if a.op == "sqrt":
        return f"sqrt({number_text(a.operands[0])})"
    return " + ".join(number_text(v) for v in a.operands)


def translate_text(u: Understanding) -> str | None:
    if u.entities.quoted:
        return u.entities.quoted[0]
    m = re.search(r"\btranslate\s+(.+?)\s+(?:to|into|in)\s+[A-Z][a-z]+", u.text, re.I)
    return m.group(1).strip(" :,\"'") if m else None


@functools.lru_cache(maxsize=256)
def path(text: str) -> str | None:
    m = re.search(
        r"(?:(?<=\s)|^)((?:~|\.{1,2})?/[\w.-]+(?:/[\w.-]+)*|[\w.-]+/[\w./-]+|[\w-]+\.[A-Za-z]{1,5})"
        r"(?=[\s?!,;:]|\.(?:\s|$)|$)",
        text,
    )
    return m.group(1).rstrip(".") if m and "@" not in m.group(1) else None


def subject(u: Understanding) -> str | None:
    quoted = re.search(r"\bsubject(?: line)?\s*(?::|of)?\s*[\"“']([^\"”']+)[\"”']", u.text, re.I)
    if quoted:
        return quoted.group(1)
    m = re.search(r"\babout\s+(?:the\s+)?(.+?)(?:[.!?]|$)", u.text, re.I)
    if m:
        s = m.group(1).strip()
        return s[0].upper() + s[1:]
    if u.said:
        words = u.said.rstrip(".!").split()
        return " ".join(words[:6])
    return None


def title(u: Understanding) -> str | None:
    if u.entities.quoted:
        return u.entities.quoted[0]
    m = re.search(
        r"\b(?:remind me to|schedule|book|create|add|set up|put|plan)\s+(?:a|an|the|my)?\s*(.+?)"
        r"(?:\s+(?:on|for|at|to|tomorrow|today|tonight|next|this|in)\b|[.!?]|$)",
        u.text,
        re.I,
    ) or re.search(
        r"^\W*(?:event|meeting|title|appointment)\s*:\s*(.+?)(?:\s+(?:on|at|in)\b|[.!?,]|$)",
        u.text,
        re.I,
    )
    if not m:
        return None
    named = m.group(1).strip()
    return named[0].upper() + named[1:] if named else None


def query(u: Understanding) -> str | None:
    words = [w for w in re.findall(r"[\w'-]+", u.text)]
    drop = {"please", "can", "you", "could", "search", "find", "look", "up", "for", "me", "the"}
    kept = [w for w in words if w.lower() not in drop]
    return " ".join(kept[:8]) or None
