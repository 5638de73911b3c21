# Owns: `Vocabulary`, the values a conversation offers to the argument generator (the command
# the model means to run, paths, directories, places, names and keywords from the prompt and
# from earlier tool outputs), and the rule for which optional properties a model fills in when
# it writes arguments itself: those the conversation gives a value for, numbers rarely, nothing
# else. Pure data and choices; every random choice comes from the caller's `random.Random`.
from __future__ import annotations

from collections.abc import Callable
from random import Random
from typing import Any, Final

import attrs

__all__ = ["Vocabulary", "wants_optional"]

P_OPTIONAL_GROUNDED: Final = 0.5  # an optional string the prompt gives a value for
P_OPTIONAL_NUMBER: Final = 0.1  # an optional number (a limit, a timeout): rarely


@attrs.frozen(kw_only=True)
class Vocabulary:
    """What the conversation says, for arguments that read like a model wrote them.

    `prompt_*` values come from the latest user message (a model may set an optional property
    from them); `seen_*` from tool outputs since then (used for required values only). `pick`
    chooses among several candidates, so a model's second call takes the second place named.
    """

    command: str | None = None  # the shell command this call runs
    query: str | None = None  # a search query built from the prompt
    text: str | None = None  # a sentence for free-text properties
    prompt_paths: tuple[str, ...] = ()
    prompt_dirs: tuple[str, ...] = ()
    seen_paths: tuple[str, ...] = ()
    places: tuple[str, ...] = ()  # capitalised words of the prompt (Kyiv, Paris)
    names: tuple[str, ...] = ()  # identifiers, quoted or backticked words of the prompt
    words: tuple[str, ...] = ()  # content words of the prompt, most telling first
    urls: tuple[str, ...] = ()
    pick: int = 0
    #: What the conversation means for a property, by its name and schema (None: nothing):
    #: used where it is valid, and an optional property is set when it gives a value.
    meant: Callable[[str, Any], Any] | None = None

    def meaning(self, name: str, schema: Any) -> Any:
        return None if self.meant is None else self.meant(name, schema)

    def _nth(self, values: tuple[str, ...]) -> str | None:
        return values[self.pick % len(values)] if values else None

    def value(self, kind: str | None, *, optional: bool = False) -> str | None:
        """A value for a property of `kind` taken from the conversation, or None. An optional
        property gets only what the prompt itself names."""
        if kind == "command":
            return None if optional else self.command
        if kind == "path":
            found = self._nth(self.prompt_paths)
            return found if found or optional else self._nth(self.seen_paths)
        if kind == "dir":
            return self._nth(self.prompt_dirs)
        if kind == "place":
            return self._nth(self.places)
        if kind == "query":
            return self.query
        if kind == "url":
            return self._nth(self.urls)
        if optional:
            return None
        if kind == "text":
            return self.text
        if kind in ("name", "id", "regex", "glob"):
            return self._nth(self.names) or self._nth(self.words)
        if kind is None:
            return self._nth(self.names) or self._nth(self.places) or self._nth(self.words)
        return None


def wants_optional(
    vocab: Vocabulary, kind: str | None, schema: Any, rng: Random, *, numeric: bool
) -> bool:
    """Whether a model writing arguments fills in an optional property: a string the prompt
    gives a value for (half the time), a number now and then (a limit, a timeout), and never a
    flag, an enum, an object or an array it has no reason to set."""
    if not isinstance(schema, dict) or "enum" in schema or "const" in schema:
        return False
    if numeric:
        return rng.random() < P_OPTIONAL_NUMBER
    if schema.get("type") == "string" and vocab.value(kind, optional=True) is not None:
        return rng.random() < P_OPTIONAL_GROUNDED
    return False
