# Owns: reading a `pattern` into a small tree, exactly as Python's `re` reads it, and sampling
# strings from it. The subset: literals, escapes, `.`, classes, groups, alternation, greedy and
# lazy quantifiers, anchors, lookarounds, global flags. Anything else (backreferences,
# conditionals, scoped or verbose flags, possessive, atomic) is refused, so match.py never needs
# a backtracking engine. Sampling stops at a length cap and is charged to the caller's budget.
from __future__ import annotations

import re
from random import Random
from typing import Any, Final

from rollout.model.args.budget import Budget


class PatternUnsupported(Exception):
    """The pattern uses a construct outside the subset this module reads exactly."""


Node = tuple[Any, ...]
# ("alt", [[node, ...], ...])  one of several sequences
# ("lit", ch, src)              one character (src: how the pattern spells it)
# ("set", pool, src)            one character of a class or `.` (pool: tidy ones to sample from)
# ("at", src)                   a zero-width anchor: ^ $ \A \Z \b \B
# ("look", kind, alt)           a lookaround: kind is "=", "!", "<=" or "<!"
# ("nop",)                      global flags: match the empty string
# ("rep", node, low, high)      low..high (None: unbounded) rounds of node

_PRINTABLE: Final = tuple(chr(c) for c in range(32, 127))
_ESCAPES: Final = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a"}
_QUANT_RE: Final = re.compile(r"\{(\d*)(,?)(\d*)\}")
_FLAGS_RE: Final = re.compile(r"\?([aimsu]+)\)")
_SetItem = tuple[int, int] | str  # a code point range, or a class letter (d D w W s S)


def _class_has(letter: str, ch: str) -> bool:
    if letter == "d":
        return ch.isdigit()
    if letter == "w":
        return ch.isalnum() or ch == "_"
    if letter == "s":
        return ch.isspace()
    return not _class_has(letter.lower(), ch)


def _char_pool(items: list[_SetItem], negate: bool) -> tuple[str, ...]:
    def member(ch: str) -> bool:
        return any(
            _class_has(item, ch) if isinstance(item, str) else item[0] <= ord(ch) <= item[1]
            for item in items
        )

    pool = [ch for ch in _PRINTABLE if member(ch) != negate]
    if not pool and not negate:  # only non-ASCII ranges: take their first characters
        for item in items:
            if isinstance(item, tuple):
                pool.extend(chr(c) for c in range(item[0], min(item[1], item[0] + 31) + 1))
    tidy = [ch for ch in pool if ch.isalnum() or ch in "_-."]
    if not pool:
        raise PatternUnsupported("empty character class")
    return tuple(tidy or pool)


def group_depth(source: str) -> int:
    """How deeply groups nest in `source` (a linear scan; escapes and classes skipped)."""
    depth = deepest = 0
    i, in_class = 0, False
    while i < len(source):
        c = source[i]
        if c == "\\":
            i += 1
        elif in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            i += 1 if source[i + 1 : i + 2] == "^" else 0
            i += 1 if source[i + 1 : i + 2] == "]" else 0
        elif c == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif c == ")":
            depth -= 1
        i += 1
    return deepest


def min_length(node: Node) -> int:
    """The length of the shortest string `node` matches."""
    tag = node[0]
    if tag in ("lit", "set"):
        return 1
    if tag == "alt":
        return min(sum(min_length(n) for n in seq) for seq in node[1])
    if tag == "rep":
        return int(node[2]) * min_length(node[1])
    return 0


def width(node: Node) -> int | None:
    """The one length every string `node` matches has, or None when lengths vary."""
    tag = node[0]
    if tag in ("lit", "set"):
        return 1
    if tag == "alt":
        widths = set()
        for seq in node[1]:
            parts = [width(n) for n in seq]
            widths.add(None if None in parts else sum(p for p in parts if p is not None))
        return widths.pop() if len(widths) == 1 else None
    if tag == "rep":
        inner = width(node[1])
        return None if inner is None or node[2] != node[3] else inner * node[2]
    return 0


class Pattern:
    """A parsed pattern: `root` (an "alt" node) and the global `flags` it sets."""

    def __init__(self, source: str) -> None:
        self._src = source
        self._pos = 0
        self.flags = ""
        self.root = self._alternation()
        if self._pos != len(source):
            raise PatternUnsupported(source)
        self.min_length = min_length(self.root)

    def sample(
        self,
        rng: Random,
        stretch: int,
        budget: Budget,
        cap: int,
        *,
        exact: bool = False,
        path: str = "$",
    ) -> str | None:
        """A string the pattern matches (or None past `cap` characters). Repetitions take
        low..low+stretch rounds (capped by the quantifier), or exactly that many with `exact`,
        to reach a minimum length. Charged a step per two rounds and characters."""
        out: list[str] = []
        spent = 0

        def emit(node: Node) -> None:
            nonlocal spent
            spent += 1
            if spent >= 64:
                budget.spend(32, path)
                spent = 0
            tag = node[0]
            if tag == "alt":
                for sub in rng.choice(node[1]):
                    emit(sub)
                    if len(out) > cap:
                        return
            elif tag == "lit":
                out.append(node[1])
            elif tag == "set":
                out.append(rng.choice(node[1]))
            elif tag == "rep":
                low, high = node[2], node[3]
                top = low + stretch if high is None else min(high, low + stretch)
                rounds = top if exact else rng.randint(low, max(low, top))
                for _ in range(min(rounds, cap + 1)):  # more rounds only overflow the cap
                    emit(node[1])
                    if len(out) > cap:
                        return
            # "at", "look", "nop": zero-width; the matcher decides whether the sample holds

        emit(self.root)
        return None if len(out) > cap else "".join(out)

    # -- parsing ----------------------------------------------------------------------------

    def _peek(self) -> str:
        return self._src[self._pos] if self._pos < len(self._src) else ""

    def _alternation(self) -> Node:
        branches = [self._sequence()]
        while self._peek() == "|":
            self._pos += 1
            branches.append(self._sequence())
        return ("alt", branches)

    def _sequence(self) -> list[Node]:
        seq: list[Node] = []
        while self._peek() not in ("", "|", ")"):
            seq.append(self._quantified(self._atom()))
        return seq

    def _quantified(self, atom: Node) -> Node:
        c = self._peek()
        if c in ("*", "+", "?"):
            self._pos += 1
            low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
        elif c == "{" and (m := _QUANT_RE.match(self._src, self._pos)) and m[0] != "{}":
            self._pos = m.end()
            low = int(m[1] or 0)
            high = int(m[3]) if m[3] else (None if m[2] else low)
        else:
            return atom
        if self._peek() == "+":  # possessive: gives up fewer strings; not modelled
            raise PatternUnsupported(self._src)
        if self._peek() == "?":  # lazy: the same strings
            self._pos += 1
        return ("rep", atom, low, high)

    def _atom(self) -> Node:
        start = self._pos
        c = self._src[self._pos]
        self._pos += 1
        if c in ("^", "$"):
            return ("at", c)
        if c == ".":
            return ("set", tuple("abcdefghijklmnopqrstuvwxyz0123456789"), ".")
        if c == "(":
            return self._group()
        if c == "[":
            return self._char_class(start)
        if c == "\\":
            item = self._escape(in_class=False)
            if len(item) == 2:  # a class escape such as \d, or an anchor such as \b
                if item[1] in "AZbB":
                    return ("at", item)
                return ("set", _char_pool([item[1]], negate=False), item)
            return ("lit", item, self._src[start : self._pos])
        if c in ("*", "+", "?"):
            raise PatternUnsupported(self._src)
        return ("lit", c, c)  # `{` too, where it starts no quantifier

    def _group(self) -> Node:
        src = self._src
        look = ""
        if src.startswith("?:", self._pos):
            self._pos += 2
        elif src.startswith(("?P<", "?<"), self._pos) and not src.startswith(
            ("?<=", "?<!"), self._pos
        ):
            end = src.find(">", self._pos)
            if end < 0:
                raise PatternUnsupported(src)
            self._pos = end + 1
        elif src.startswith(("?=", "?!", "?<=", "?<!"), self._pos):
            look = src[self._pos + 1 : self._pos + (3 if src[self._pos + 1] == "<" else 2)]
            self._pos += 1 + len(look)
        elif src.startswith("?", self._pos):
            flags = _FLAGS_RE.match(src, self._pos)
            if not flags:  # backreferences, conditionals, scoped and verbose flags, ...
                raise PatternUnsupported(src)
            self._pos = flags.end()
            self.flags += flags[1]
            return ("nop",)
        node = self._alternation()
        if self._peek() != ")":
            raise PatternUnsupported(src)
        self._pos += 1
        if look:
            if look.startswith("<") and width(node) is None:
                raise PatternUnsupported(src)
            return ("look", look, node)
        return node

    def _char_class(self, start: int) -> Node:
        negate = self._peek() == "^"
        if negate:
            self._pos += 1
        items: list[_SetItem] = []
        first = True
        while True:
            c = self._peek()
            if c == "":
                raise PatternUnsupported(self._src)
            if c == "]" and not first:
                self._pos += 1
                break
            if c == "[" and self._src[self._pos + 1 : self._pos + 2] in (":", "=", "."):
                raise PatternUnsupported(self._src)  # reserved for set syntax (FutureWarning)
            first = False
            self._pos += 1
            begin = self._escape(in_class=True) if c == "\\" else c
            if len(begin) == 2:  # a class escape such as \d
                items.append(begin[1])
                continue
            if self._peek() == "-" and self._src[self._pos + 1 : self._pos + 2] not in ("]", ""):
                self._pos += 1
                c2 = self._src[self._pos]
                self._pos += 1
                end = self._escape(in_class=True) if c2 == "\\" else c2
                if len(end) != 1 or ord(end) < ord(begin):
                    raise PatternUnsupported(self._src)
                items.append((ord(begin), ord(end)))
            else:
                items.append((ord(begin), ord(begin)))
        return ("set", _char_pool(items, negate), self._src[start : self._pos])

    def _escape(self, *, in_class: bool) -> str:
        """The character an escape stands for; the escape itself (backslash and letter) for a
        class such as `\\d` or an anchor such as `\\b` (outside a class)."""
        c = self._peek()
        if c == "":
            raise PatternUnsupported(self._src)
        self._pos += 1
        if c in "dDwWsS" or (not in_class and c in "AZbB"):
            return "\\" + c
        if c in _ESCAPES:
            return _ESCAPES[c]
        if c == "b":  # in a class: backspace
            return "\b"
        if c == "0":  # an octal escape: \0 and up to two more octal digits
            octal = re.match(r"[0-7]{0,2}", self._src[self._pos : self._pos + 2])
            size = len(octal[0]) if octal else 0
            self._pos += size
            return chr(int("0" + self._src[self._pos - size : self._pos], 8))
        if c in ("x", "u"):
            size = 2 if c == "x" else 4
            digits = self._src[self._pos : self._pos + size]
            if len(digits) != size or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise PatternUnsupported(self._src)
            self._pos += size
            return chr(int(digits, 16))
        if c.isalnum():  # backreferences, \p{...}, \U, \N, and other escapes not modelled
            raise PatternUnsupported(self._src)
        return c
