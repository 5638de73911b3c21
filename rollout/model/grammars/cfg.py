# Sentences of a Lark grammar (the syntax the API documents for `custom` tools' `grammar` format):
# the grammar is compiled by the `lark` package itself, a sentence is derived from its start rule
# by random choices that turn, past a depth (or a length), to the expansion that ends soonest, so
# every derivation terminates; terminals are their literal strings or a sample of their regex
# (rollout.model.grammars.regex). Lark's own parser is the check: a draw it rejects is drawn again.
from __future__ import annotations

import functools
import re
from random import Random
from typing import Final

import lark
from lark.grammar import NonTerminal, Rule, Symbol
from lark.lexer import PatternStr, TerminalDef

from rollout.model.grammars.regex import GrammarUnsupported, regex_sample

__all__ = ["Compiled", "compile_lark", "lark_sample"]

FREE_DEPTH: Final = 6  # derivation depth under which expansions are drawn at random
MAX_TOKENS: Final = 48  # terminals past which every choice ends as soon as it can
ATTEMPTS: Final = 30
_INF: Final = 1 << 30


class Compiled:
    """A grammar as lark compiled it: its rules by name, the height of each name's shortest
    derivation, its terminals, and how tokens may be separated (the ignored terminals)."""

    def __init__(self, grammar: str) -> None:
        try:
            self.parser = lark.Lark(grammar)
        except lark.exceptions.LarkError as exc:
            raise GrammarUnsupported(f"invalid Lark grammar: {exc}") from None
        self.start = self.parser.options.start[0]
        self.rules: dict[str, list[Rule]] = {}
        for rule in self.parser.rules:
            self.rules.setdefault(rule.origin.name, []).append(rule)
        self.terminals: dict[str, TerminalDef] = {t.name: t for t in self.parser.terminals}
        ignored = [self.terminals[n] for n in self.parser.ignore_tokens if n in self.terminals]
        self.separators = [""]
        for sep in (" ", "\n"):
            if any(re.fullmatch(t.pattern.to_regexp(), sep) for t in ignored):
                self.separators.append(sep)
        self.height = self._heights()
        if self.height.get(self.start, _INF) >= _INF:
            raise GrammarUnsupported(f"the rule '{self.start}' derives no finite sentence")

    def _heights(self) -> dict[str, int]:
        """The height of each rule name's shortest derivation (a fixpoint; _INF: none)."""
        height = dict.fromkeys(self.rules, _INF)
        changed = True
        while changed:
            changed = False
            for name, rules in self.rules.items():
                best = min(self._rule_height(r, height) for r in rules)
                if best < height[name]:
                    height[name], changed = best, True
        return height

    @staticmethod
    def _rule_height(rule: Rule, height: dict[str, int]) -> int:
        inner = [height.get(s.name, _INF) for s in rule.expansion if isinstance(s, NonTerminal)]
        return 1 + max(inner, default=0)

    def accepts(self, text: str) -> bool:
        try:
            self.parser.parse(text)
        except lark.exceptions.LarkError:
            return False
        return True


@functools.lru_cache(maxsize=64)
def compile_lark(grammar: str) -> Compiled:
    return Compiled(grammar)


class _Derivation:
    def __init__(self, g: Compiled, rng: Random) -> None:
        self.g, self.rng = g, rng
        self.tokens: list[str] = []

    def rule(self, name: str, depth: int) -> None:
        rules = self.g.rules[name]
        if depth >= FREE_DEPTH or len(self.tokens) >= MAX_TOKENS:
            heights = [self.g._rule_height(r, self.g.height) for r in rules]
            rules = [r for r, h in zip(rules, heights, strict=True) if h == min(heights)]
        else:
            rules = [r for r in rules if self.g._rule_height(r, self.g.height) < _INF]
        for symbol in self.rng.choice(rules).expansion:
            self.symbol(symbol, depth + 1)

    def symbol(self, symbol: Symbol, depth: int) -> None:
        if isinstance(symbol, NonTerminal):
            self.rule(symbol.name, depth)
            return
        pattern = self.g.terminals[symbol.name].pattern
        if isinstance(pattern, PatternStr):
            self.tokens.append(pattern.value)
        else:
            self.tokens.append(regex_sample(pattern.to_regexp(), self.rng))


def lark_sample(grammar: str, rng: Random) -> str:
    """A sentence of the Lark `grammar` that lark's own parser accepts."""
    g = compile_lark(grammar)
    for _ in range(ATTEMPTS):
        d = _Derivation(g, rng)
        d.rule(g.start, 0)
        for sep in g.separators:
            text = sep.join(d.tokens)
            if g.accepts(text):
                return text
    raise GrammarUnsupported("no sentence of the grammar was found")
