# Owns the small text helpers the default model's understanding shares: words of a text, a
# word's stem, and the concepts (understand.lexicon) a text or a name is about. Pure.
from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from rollout.model.understand.lexicon import CONCEPTS

_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_NON_WORD = re.compile(r"[^a-z0-9]+")

__all__ = ["concepts_of", "concepts_of_name", "name_tokens", "stem", "words_of"]


@functools.lru_cache(maxsize=4096)
def name_tokens(text: str) -> tuple[str, ...]:
    """The lower-case words of an identifier or a sentence (getWeather, get_weather: get,
    weather). Cached: tools' names come with every request."""
    spaced = _CAMEL.sub(r"\1_\2", text)
    return tuple(t for t in _NON_WORD.split(spaced.lower()) if t)


def words_of(text: str) -> list[str]:
    return [w.lower() for w in re.findall(r"[A-Za-z][A-Za-z'-]*", text)]


def stem(word: str) -> str:
    """A crude stem: plural and verb endings cut (emails: email, converting: convert)."""
    for suffix, repl in (("ies", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3 and not word.endswith("ss"):
            return word[: -len(suffix)] + repl
    return word


@functools.lru_cache(maxsize=8192)
def concept_of(word: str) -> str | None:
    return CONCEPTS.get(word) or CONCEPTS.get(stem(word))


def concepts_of(words: Iterable[str]) -> frozenset[str]:
    return frozenset(c for w in words if (c := concept_of(w)) is not None)


@functools.lru_cache(maxsize=1024)
def concepts_of_name(text: str) -> frozenset[str]:
    """The concepts of an identifier or a description (a tool's name: cached, since the same
    tools come with every request)."""
    return concepts_of(name_tokens(text))
