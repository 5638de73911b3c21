# Owns: deciding whether a `pattern` matches a string, in work linear in the string per pattern
# node and charged to the call's budget, never with a backtracking engine (Python's `re` can take
# exponential time on `(x+x+)+y`). A match is computed as the set of positions each node can
# reach, so the answer is exactly `re.search`'s; `re` itself only validates a whole pattern and
# decides single characters and anchors. Also the per-call cache of parsed patterns.
from __future__ import annotations

import functools
import operator
import re
from collections.abc import Callable
from typing import Final

from rollout.model.args.budget import (
    Budget,
    LimitExceeded,
    Limits,
    UnsupportedSchema,
    over_limit,
)
from rollout.model.args.regex import Node, Pattern, PatternUnsupported, group_depth, min_length
from rollout.model.args.regex import width as fixed_width

_UNSUPPORTED: Final = (
    "uses a construct the generator does not match (backreferences, conditionals, scoped or "
    "verbose flags, possessive or atomic groups); Python's backtracking engine could take "
    "unbounded time on it"
)


class Patterns:
    """Every pattern of one call, validated and parsed once, and matched under its budget."""

    def __init__(self, budget: Budget, limits: Limits) -> None:
        self.budget = budget
        self.limits = limits
        self._parsed: dict[str, Pattern | str] = {}  # a pattern, or why it is refused
        self._compiled: dict[str, re.Pattern[str]] = {}
        self._chars: dict[str, dict[str, bool]] = {}

    def get(self, source: str, path: str) -> Pattern:
        """The parsed pattern; UnsupportedSchema if it is invalid, too big or not readable."""
        if source not in self._parsed:
            try:
                self._parsed[source] = self._parse(source, path)
            except LimitExceeded:
                raise
            except UnsupportedSchema as exc:
                self._parsed[source] = exc.reason
        parsed = self._parsed[source]
        if isinstance(parsed, str):
            raise UnsupportedSchema(path, parsed)
        return parsed

    def _parse(self, source: str, path: str) -> Pattern:
        limits = self.limits
        if len(source) > limits.max_pattern_length:
            what = f"a pattern of {len(source)} characters"
            raise over_limit(path, what, limits.max_pattern_length, "max_pattern_length")
        if (depth := group_depth(source)) > limits.max_depth:
            what = f"a pattern with groups nested {depth} deep"
            raise over_limit(path, what, limits.max_depth, "max_depth")
        self.budget.spend(len(source), path)  # re's parser is Python: about a step a character
        try:
            re.compile(source)
        except (re.error, OverflowError, RecursionError, ValueError) as exc:
            raise UnsupportedSchema(
                path, f"pattern {source!r} is not a valid regex: {exc}"
            ) from None
        try:
            return Pattern(source)
        except PatternUnsupported:
            raise UnsupportedSchema(path, f"pattern {source!r} {_UNSUPPORTED}") from None

    def search(self, source: str, text: str, path: str) -> bool:
        """`re.search(source, text) is not None`, in bounded work."""
        return _Matcher(self, self.get(source, path), text, path).search()

    def compiled(self, src: str, flags: str) -> re.Pattern[str]:
        key = f"(?{flags}){src}" if flags else src
        rx = self._compiled.get(key)
        if rx is None:
            rx = self._compiled[key] = re.compile(key)
        return rx

    def char_memo(self, src: str, flags: str) -> dict[str, bool]:
        return self._chars.setdefault(f"{flags}:{src}", {})


class _Matcher:
    def __init__(self, patterns: Patterns, pattern: Pattern, text: str, path: str) -> None:
        self._patterns = patterns
        self._budget = patterns.budget
        self._root = pattern.root
        self._flags = pattern.flags
        self._text = text
        self._path = path
        self._looks: dict[tuple[int, int], bool] = {}
        self._runs: dict[int, list[int]] = {}

    def search(self) -> bool:
        self._budget.chars(len(self._text), self._path)
        return bool(self._eval(self._root, set(range(len(self._text) + 1))))

    def _eval(self, node: Node, at: set[int]) -> set[int]:
        """The positions reachable by matching `node` from each position in `at`."""
        self._budget.spend(1 + len(at) // 4, self._path)  # Python-level work per position
        tag = node[0]
        text, n = self._text, len(self._text)
        if tag == "alt":
            out: set[int] = set()
            for seq in node[1]:
                cur = at
                for sub in seq:
                    cur = self._eval(sub, cur)
                    if not cur:
                        break
                out |= cur
            return out
        if tag in ("lit", "set"):
            ok = self._char_test(node)
            return {p + 1 for p in at if p < n and ok(text[p])}
        if tag == "rep":
            if node[1][0] in ("lit", "set"):
                return self._char_run(node, at)
            return self._rep(node, at)
        if tag == "at":
            rx = self._patterns.compiled(node[1], self._flags)
            return {p for p in at if rx.match(text, p)}
        if tag == "look":
            return {p for p in at if self._look(node, p)}
        return at  # "nop"

    def _char_test(self, node: Node) -> Callable[[str], bool]:
        if node[0] == "lit" and "i" not in self._flags:
            return functools.partial(operator.eq, node[1])
        memo = self._patterns.char_memo(node[2], self._flags)
        rx = self._patterns.compiled(node[2], self._flags)

        def ok(ch: str) -> bool:
            hit = memo.get(ch)
            if hit is None:
                hit = memo[ch] = rx.fullmatch(ch) is not None
            return hit

        return ok

    def _char_run(self, node: Node, at: set[int]) -> set[int]:
        """A repeated single character: from p, any count low..high up to the run at p."""
        atom, low, high = node[1], node[2], node[3]
        runs = self._runs.get(id(atom))
        if runs is None:
            self._budget.spend(1 + len(self._text) // 2, self._path)
            ok = self._char_test(atom)
            runs = [0] * (len(self._text) + 1)
            for i in range(len(self._text) - 1, -1, -1):
                runs[i] = runs[i + 1] + 1 if ok(self._text[i]) else 0
            self._runs[id(atom)] = runs
        self._budget.spend(1 + len(at) // 2, self._path)
        out: set[int] = set()
        reach = -1
        for p in sorted(at):  # spans [p + low, end] by start, merged: each position added once
            run = runs[p]
            if run < low:
                continue
            end = p + (run if high is None else min(high, run))
            start = max(p + low, reach + 1)
            if start <= end:
                out.update(range(start, end + 1))
                reach = end
        self._budget.spend(len(out) // 4, self._path)
        return out

    def _rep(self, node: Node, at: set[int]) -> set[int]:
        body, low, high = node[1], node[2], node[3]
        cur = at
        seen: dict[frozenset[int], int] = {}
        nullable = min_length(body) == 0
        i = 0
        while i < low and cur:
            if nullable:  # rounds may stop changing, or cycle: skip ahead
                key = frozenset(cur)
                if key in seen:
                    for _ in range((low - i) % (i - seen[key])):
                        cur = self._eval(body, cur)
                    break
                seen[key] = i
            cur = self._eval(body, cur)
            i += 1
        if not cur or high == low:
            return cur
        result = set(cur)
        frontier = cur
        rounds = 0
        while frontier and (high is None or rounds < high - low):
            frontier = self._eval(body, frontier) - result
            result |= frontier
            rounds += 1
        return result

    def _look(self, node: Node, p: int) -> bool:
        key = (id(node), p)
        hit = self._looks.get(key)
        if hit is None:
            kind, sub = node[1], node[2]
            if kind in ("=", "!"):
                hit = bool(self._eval(sub, {p}))
            else:
                w = fixed_width(sub) or 0
                hit = p >= w and p in self._eval(sub, {p - w})
            hit = self._looks[key] = hit == (kind in ("=", "<="))
        return hit
