# Sentences derived from a Lark grammar (rollout.model.grammars.cfg) are accepted by lark's own
# parser of that grammar: grammars after the OpenAI custom-tools guide's (the `math_exp` tool, the
# SQL dialect), a recursive grammar whose derivations must be cut off, grammars with ignored
# whitespace, and grammars hypothesis builds; a grammar with no finite sentence is refused.
from __future__ import annotations

import random

import lark
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rollout.model.grammars import GrammarUnsupported, lark_sample
from rollout.model.grammars.cfg import MAX_TOKENS

#: After the guide's `math_exp` custom tool (sums of products of integers, spaced).
MATH_EXP = r"""
start: expr
expr: term (SP ADD SP term)* -> add
term: factor (SP MUL SP factor)* -> mul
factor: INT
SP: " "
ADD: "+"
MUL: "*"
%import common.INT
"""
#: After the guide's SQL dialect example (a query of fixed shape, regex terminals).
MSSQL = r"""
start: "SELECT " select_list " FROM " table " WHERE " filters " ORDER BY " sort_field " DESC;"
filters: amount_filter " AND " date_filter
select_list: column (", " column)*
column: IDENTIFIER
table: IDENTIFIER
amount_filter: "total_amount" SP? ">" SP? NUMBER
date_filter: "order_date" SP? ">" SP? DATE
sort_field: "order_date" | "total_amount"
SP: " "
IDENTIFIER: /[A-Za-z_][A-Za-z0-9_]*/
NUMBER: /[0-9]+/
DATE: /'[0-9]{4}-[0-9]{2}-[0-9]{2}'/
"""
JSONISH = r"""
?start: value
?value: object | array | ESCAPED_STRING | SIGNED_NUMBER | "true" | "false" | "null"
array: "[" [value ("," value)*] "]"
object: "{" [pair ("," pair)*] "}"
pair: ESCAPED_STRING ":" value
%import common.ESCAPED_STRING
%import common.SIGNED_NUMBER
%import common.WS
%ignore WS
"""
NESTED = r"""
start: s
s: "(" s ")" s | "x"
"""
WORDS = r"""
start: sentence+
sentence: WORD+ "."
%import common.WORD
%import common.WS
%ignore WS
"""
GRAMMARS = [MATH_EXP, MSSQL, JSONISH, NESTED, WORDS]


@pytest.mark.parametrize("grammar", GRAMMARS)
def test_sentences_parse(grammar: str) -> None:
    parser = lark.Lark(grammar)
    rng = random.Random(11)
    for _ in range(20):
        parser.parse(lark_sample(grammar, rng))


def test_recursion_is_bounded() -> None:
    for seed in range(30):
        text = lark_sample(NESTED, random.Random(seed))
        assert text.count("x") <= 4 * MAX_TOKENS


def test_same_seed_same_sentence() -> None:
    assert lark_sample(MSSQL, random.Random(5)) == lark_sample(MSSQL, random.Random(5))


@pytest.mark.parametrize("grammar", ['start: a\na: a "x"', 'start: "a" (', "start: UNDEFINED"])
def test_grammars_without_a_finite_sentence_are_refused(grammar: str) -> None:
    with pytest.raises(GrammarUnsupported):
        lark_sample(grammar, random.Random(0))


# Grammars of a few rules over literals, regex terminals and each other (EBNF operators too).
_terminals = st.sampled_from(['"a"', '"bc"', "/[0-9]+/", "/[a-z]{1,3}/", '"-"', "NUM"])
_ops = st.sampled_from(["", "?", "*", "+"])


@st.composite
def grammars(draw: st.DrawFn) -> str:
    names = ["start", "r1", "r2"]
    lines = []
    for i, name in enumerate(names):
        alts = []
        for _ in range(draw(st.integers(1, 3))):
            symbols = []
            for _ in range(draw(st.integers(1, 3))):
                later = names[i + 1 :]
                if later and draw(st.booleans()):
                    symbols.append(draw(st.sampled_from(later)) + draw(_ops))
                else:
                    symbols.append(draw(_terminals) + draw(_ops))
            alts.append(" ".join(symbols))
        lines.append(f"{name}: " + " | ".join(alts))
    lines += ["NUM: /[0-9]/", '%ignore " "']
    return "\n".join(lines) + "\n"


@settings(max_examples=60, deadline=None)
@given(grammars(), st.integers(0, 2**32))
def test_generated_grammars_sample_what_they_parse(grammar: str, seed: int) -> None:
    lark.Lark(grammar).parse(lark_sample(grammar, random.Random(seed)))
