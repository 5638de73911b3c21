# Owns the small text helpers the default model's understanding shares: words of a text, a
# word's stem, and the concepts (understand.lexicon) a text or a name is about. Pure.
from __future__ import annotations

import re
from collections.abc import Iterable

from rollout.model.understand.lexicon import CONCEPTS

__all__ = ["concepts_of", "name_tokens", "stem", "words_of"]


def name_tokens(text: str) -> list[str]:
    """The lower-case words of an identifier or a sentence (getWeather, get_weather: get,
    weather)."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", text)
    return [t for t in re.split(r"[^a-z0-9]+", spaced.lower()) if t]


def words_of(text: str) -> list[str]:
    return [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z'-]*", text)]


def stem(word: str) -> str:
    """A crude stem: plural and verb endings cut (emails: email, converting: convert)."""
    for suffix, repl in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: -len(suffix)] + repl
    return word


def concept_of(word: str) -> str | None:
    return CONCEPTS.get(word) or CONCEPTS.get(stem(word))


def concepts_of(words: Iterable[str]) -> frozenset[str]:
    return frozenset(c for w in words if (c := concept_of(w)) is not None)
