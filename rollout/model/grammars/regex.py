# Strings a regex matches in full, sampled from the parse tree Python's own `re` builds
# (`re._parser`), so what the generator reads is exactly what `re.fullmatch` checks. Repetition is
# bounded (a few rounds past the minimum), lookarounds and anchors are left to the check: a draw
# that does not match is drawn again, and a pattern no draw matches is refused. Pure: the caller's
# Random decides every choice, so a seeded model writes the same input every run.
from __future__ import annotations

import re
import re._constants as sre
import re._parser as sre_parse
from random import Random
from typing import Any, Final

__all__ = ["GrammarUnsupported", "regex_sample"]

EXTRA_ROUNDS: Final = 3  # rounds of an open-ended repeat drawn past its minimum
ATTEMPTS: Final = 40  # draws before a pattern is refused
_PRINTABLE: Final = tuple(chr(c) for c in range(32, 127))
_TIDY: Final = tuple(c for c in _PRINTABLE if c.isalnum())


class GrammarUnsupported(Exception):
    """No bounded sample of the grammar (or regex) could be found."""


def _category(name: Any, ch: str) -> bool:
    if name is sre.CATEGORY_DIGIT:
        return ch.isdigit()
    if name is sre.CATEGORY_NOT_DIGIT:
        return not ch.isdigit()
    if name is sre.CATEGORY_SPACE:
        return ch.isspace()
    if name is sre.CATEGORY_NOT_SPACE:
        return not ch.isspace()
    if name is sre.CATEGORY_WORD:
        return ch.isalnum() or ch == "_"
    if name is sre.CATEGORY_NOT_WORD:
        return not (ch.isalnum() or ch == "_")
    return False


def _in_set(items: list[tuple[Any, Any]], ch: str) -> bool:
    negate = False
    hit = False
    for op, arg in items:
        if op is sre.NEGATE:
            negate = True
        elif op is sre.LITERAL:
            hit = hit or ord(ch) == arg
        elif op is sre.RANGE:
            hit = hit or arg[0] <= ord(ch) <= arg[1]
        elif op is sre.CATEGORY:
            hit = hit or _category(arg, ch)
    return hit != negate


def _pick_in(items: list[tuple[Any, Any]], rng: Random) -> str:
    pool = [ch for ch in _PRINTABLE if _in_set(items, ch)]
    if "\n" not in pool and _in_set(items, "\n"):
        pool.append("\n")
    if not pool:  # only characters past ASCII: the ranges' own
        for op, arg in items:
            if op is sre.RANGE:
                pool.extend(chr(c) for c in range(arg[0], min(arg[1], arg[0] + 31) + 1))
            elif op is sre.LITERAL and op is not sre.NEGATE:
                pool.append(chr(arg))
        pool = [ch for ch in pool if _in_set(items, ch)]
    if not pool:
        raise GrammarUnsupported("a character class no character is drawn from")
    tidy = [ch for ch in pool if ch.isalnum()] or [ch for ch in pool if ch == " "]
    return rng.choice(tidy if tidy and rng.random() < 0.8 else pool)


class _Draw:
    """One draw over a parse tree (the groups drawn so far, for backreferences)."""

    def __init__(self, rng: Random) -> None:
        self.rng = rng
        self.groups: dict[int, str] = {}

    def seq(self, nodes: Any) -> str:
        return "".join(self.node(op, arg) for op, arg in nodes)

    def node(self, op: Any, arg: Any) -> str:
        rng = self.rng
        if op is sre.LITERAL:
            return chr(arg)
        if op is sre.NOT_LITERAL:
            return _pick_in([(sre.NEGATE, None), (sre.LITERAL, arg)], rng)
        if op is sre.ANY:
            return rng.choice(_TIDY)
        if op is sre.IN:
            return _pick_in(arg, rng)
        if op is sre.CATEGORY:
            return _pick_in([(sre.CATEGORY, arg)], rng)
        if op is sre.BRANCH:
            return self.seq(rng.choice(arg[1]))
        if op is sre.SUBPATTERN:
            group, _, _, body = arg
            text = self.seq(body)
            if group is not None:
                self.groups[group] = text
            return text
        if op is sre.ATOMIC_GROUP:
            return self.seq(arg)
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT):
            low, high, body = arg
            top = low + EXTRA_ROUNDS if high is sre.MAXREPEAT else min(high, low + EXTRA_ROUNDS)
            return "".join(self.seq(body) for _ in range(rng.randint(low, top)))
        if op is sre.GROUPREF:
            return self.groups.get(arg, "")
        if op in (sre.AT, sre.ASSERT, sre.ASSERT_NOT):
            return ""  # zero width: the full-match check decides
        raise GrammarUnsupported(f"regex construct {op} is not supported")


def regex_sample(pattern: str, rng: Random, flags: int = 0) -> str:
    """A string `re.fullmatch(pattern, s, flags)` accepts."""
    try:
        compiled = re.compile(pattern, flags)
        tree = sre_parse.parse(pattern, flags)
    except re.error as exc:
        raise GrammarUnsupported(f"invalid regex: {exc}") from None
    for _ in range(ATTEMPTS):
        text = _Draw(rng).seq(tree)
        if compiled.fullmatch(text):
            return text
    raise GrammarUnsupported(f"no string matching {pattern!r} was found")
