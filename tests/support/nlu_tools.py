# What the cases of tests/model/test_reads_like_a_model.py (support.nlu_cases) are made of: a
# Case (a prompt, the tools offered, the tool the default model should call or none, the values
# its arguments should carry, each tool's canned result, what the answer should say), an earlier
# Turn for follow-ups, and the everyday tools offered (weather, arithmetic, e-mail, calendar,
# flights, stocks, currency, translation, files, a shell, lookups).
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from support.tools import function_tool


@attrs.frozen
class Eq:
    """An expected value that must be equal (a string: ignoring case), not merely contain it."""

    value: Any


#: An expected value: a string (contained, ignoring case; three letters or fewer: equal), a
#: number (equal), `Eq` (equal), a pattern (searched) or a tuple of these (any of them).
Expected = Any


@attrs.frozen(kw_only=True)
class Turn:
    """An earlier, completed turn: the prompt, the call made and its output, the answer."""

    prompt: str
    tool: str
    arguments: Mapping[str, Any]
    output: str
    answer: str


@attrs.frozen(kw_only=True)
class Case:
    id: str
    prompt: str
    tools: Sequence[Mapping[str, Any]] = attrs.field(repr=False)
    tool: str | tuple[str, ...] | None = None  # the tool called, or the tools called in order
    ordered: bool = True  # the tools of a tuple called in its order (else in any order)
    # The values of the call's arguments; of each call in turn (of each tool of a tuple).
    args: Mapping[str, Expected] | Sequence[Mapping[str, Expected]] = attrs.Factory(dict)
    results: Mapping[str, str] = attrs.Factory(dict)  # by tool name, or "name:argument text"
    says: Sequence[Expected] = ()  # what the answer contains (strings, patterns, any-ofs)
    calls: int | tuple[int, int] | None = None  # how many calls (None: one per tool named)
    history: Sequence[Turn] = ()
    schema: Mapping[str, Any] | None = None  # answer in this json_schema format
    fields: Mapping[str, Expected] = attrs.Factory(dict)  # values of the JSON answer
    lines: int | None = None  # the answer's number of lines
    fresh: int = 1  # distinct words of the answer that are not in the prompt, at least


def obj(required: Sequence[str] = (), **props: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(required or props)}


S: dict[str, Any] = {"type": "string"}
N: dict[str, Any] = {"type": "number"}
DATE: dict[str, Any] = {"type": "string", "format": "date"}

WEATHER = function_tool(
    "get_weather",
    obj(["city"], city=S, unit={"type": "string", "enum": ["celsius", "fahrenheit"]}),
    description="Get the current weather for a city.",
)
MULTIPLY = function_tool("multiply", obj(a=N, b=N), description="Multiply two numbers.")
ADD = function_tool("add", obj(a=N, b=N), description="Add two numbers.")
EMAIL = function_tool(
    "send_email",
    obj(to={**S, "description": "Recipient e-mail address."}, subject=S, body=S),
    description="Send an e-mail.",
)
EVENT = function_tool(
    "create_event",
    obj(title=S, date=DATE, time={**S, "description": "Start time, HH:MM (24-hour)."}),
    description="Create an event in the user's calendar.",
)
FLIGHTS = function_tool(
    "search_flights",
    obj(
        origin={**S, "description": "Departure city."},
        destination={**S, "description": "Arrival city."},
        date={**S, "description": "Departure date, YYYY-MM-DD."},
    ),
    description="Search for flights between two cities on a date.",
)
STOCK = function_tool(
    "get_stock_price",
    obj(ticker={**S, "description": "Stock ticker symbol, e.g. IBM."}),
    description="Get the latest price of a stock.",
)
CURRENCY = function_tool(
    "convert_currency",
    {
        "type": "object",
        "properties": {
            "amount": N,
            "from": {**S, "description": "ISO 4217 code of the source currency."},
            "to": {**S, "description": "ISO 4217 code of the target currency."},
        },
        "required": ["amount", "from", "to"],
    },
    description="Convert an amount of money from one currency to another.",
)
TRANSLATE = function_tool(
    "translate",
    obj(text=S, target_language={**S, "description": "The language to translate into."}),
    description="Translate text into another language.",
)
READ_FILE = function_tool(
    "read_file", obj(path={**S, "description": "Path of the file."}), description="Read a file."
)
SHELL = function_tool(
    "run_shell",
    obj(command={**S, "description": "The shell command to run."}),
    description="Run a shell command in the user's project and return its output.",
)
USER = function_tool(
    "get_user", obj(name={**S, "description": "Full name."}), description="Look up a user."
)
WORD = function_tool(
    "lookup_word", obj(word=S), description="Look up the definition of an English word."
)
ALL = (
    *(WEATHER, MULTIPLY, ADD, EMAIL, EVENT, FLIGHTS, STOCK, CURRENCY, TRANSLATE, READ_FILE),
    *(SHELL, USER, WORD),
)
SHELL_TOOLS = frozenset({"run_shell"})

#: Subjects a sentence of commentary may name: named there, they are in the call's arguments.
SUBJECTS = (
    "Paris", "Tokyo", "Oslo", "London", "Kyiv", "Lviv", "Berlin", "Boston", "Chicago", "Madrid",
    "Lisbon", "Rome", "New York", "San Francisco", "AAPL", "MSFT", "TSLA", "NVDA", "Jane Doe",
    "Carlos Rivera", "Priya Patel", "bob@example.com", "alice@corp.com",
)  # fmt: skip
