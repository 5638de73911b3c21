# Owns arguments from meaning: the value the conversation gives for one property of a tool's
# parameters (or of a response format), chosen by the property's name, description, type,
# format and enum and by what the tool is about: a `city` gets the place named, `to` the e-mail
# address (or, for a currency converter, the second currency; for a flight, the destination),
# `a` and `b` the operands, a `date` the day named in ISO form. None where the conversation
# gives nothing that fits; the argument generator then writes the value as before. Pure.
from __future__ import annotations

import datetime
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs

from rollout.model.understand import Understanding
from rollout.model.understand.lexicon import LANGUAGE_CODES
from rollout.model.understand.phrases import (
    MOODS,
    counted,
    expression,
    has_phrase,
    path,
    query,
    said_words,
    sentiment,
    subject,
    title,
    translate_text,
)
from rollout.model.understand.text import concepts_of_name, name_tokens

__all__ = ["Filler", "missing"]

_ORIGIN: Final = frozenset({"origin", "from", "departure", "source", "start", "src", "depart"})
_DESTINATION: Final = frozenset({"destination", "to", "arrival", "dest", "target", "arrive"})
_PLACE: Final = frozenset({"city", "location", "place", "where", "region", "country", "town"})
_FIRST: Final = frozenset({"a", "x", "first", "num1", "number1", "left", "lhs", "n1", "dividend"})
_SECOND: Final = frozenset({"b", "y", "second", "num2", "number2", "right", "rhs", "n2", "divisor"})
_QUERY: Final = frozenset(
    {"query", "q", "search", "keywords", "term", "terms", "question", "topic"}
)
_PERSON: Final = frozenset(
    {"person", "attendee", "attendees", "contact", "username", "who", "with"}
)
_BODY: Final = frozenset({"body", "message", "content", "text", "msg"})
_TITLE: Final = frozenset({"title", "summary", "subject", "event", "name"})
#: Every name word a value is chosen for: a property whose name has none of them (and that
#: the prompt does not count, as in "3 days") gets nothing from the conversation.
_MEANINGFUL: Final = (
    _ORIGIN | _DESTINATION | _PLACE | _FIRST | _SECOND | _QUERY | _PERSON | _BODY | _TITLE
) | frozenset(
    [
        "age",
        "amount",
        "attendees",
        "base",
        "cc",
        "checkout",
        "cities",
        "company",
        "count",
        "currency",
        "customer",
        "date",
        "datetime",
        "day",
        "dir",
        "directory",
        "email",
        "emails",
        "end",
        "equation",
        "expr",
        "expression",
        "file",
        "filename",
        "filepath",
        "formula",
        "fullname",
        "goods",
        "guests",
        "hour",
        "href",
        "input",
        "invitees",
        "item",
        "items",
        "lang",
        "language",
        "link",
        "locale",
        "locations",
        "n",
        "name",
        "number",
        "org",
        "organisation",
        "organization",
        "participants",
        "path",
        "people",
        "phrase",
        "places",
        "product",
        "qty",
        "quantity",
        "quote",
        "recipient",
        "recipients",
        "return",
        "sku",
        "source",
        "start",
        "stock",
        "subject",
        "sum",
        "symbol",
        "symbols",
        "term",
        "ticker",
        "tickers",
        "time",
        "timestamp",
        "to",
        "units",
        "until",
        "url",
        "value",
        "vendor",
        "website",
        "when",
        "word",
        "x",
        "fahrenheit",
        "celsius",
        "unit",
        "units",
    ]
)
_UNIT_WORDS: Final = {
    "celsius": ("celsius", "metric", "c"),
    "fahrenheit": ("fahrenheit", "imperial", "f"),
}


def _description(schema: Any) -> str:
    if isinstance(schema, Mapping) and isinstance(schema.get("description"), str):
        return str(schema["description"])
    return ""


def _types(schema: Any) -> set[str]:
    if not isinstance(schema, Mapping):
        return set()
    t = schema.get("type")
    return {t} if isinstance(t, str) else set(t) if isinstance(t, list) else set()


@attrs.frozen
class Filler:
    """What the conversation says for each property of one tool (or format)."""

    u: Understanding
    tool: str = ""  # the tool's name and description, for what its properties mean
    results: Sequence[Mapping[str, Any]] = ()  # JSON objects the tools returned
    pick: int = 0
    #: The arguments of this tool's call in an earlier turn ("and in French?" keeps its text).
    previous: Mapping[str, Any] = attrs.field(factory=dict)
    #: What the tools returned since the prompt, in words (a message that passes it on).
    summary: str | None = None

    @property
    def about(self) -> frozenset[str]:
        return concepts_of_name(self.tool)

    #: What each property was given, by name and schema (the generator asks twice: whether
    #: to set an optional property, then for its value).
    _memo: dict[tuple[str, int], Any] = attrs.field(factory=dict, eq=False, repr=False)

    def __call__(self, name: str, schema: Any) -> Any:
        key = (name, id(schema))
        if key in self._memo:
            return self._memo[key]
        plain = not (isinstance(schema, Mapping) and ("enum" in schema or "format" in schema))
        if plain and not self.results and not self.u.elliptical:
            tokens = name_tokens(name)
            if _MEANINGFUL.isdisjoint(tokens) and counted(self.u.text).keys().isdisjoint(tokens):
                self._memo[key] = None  # a name no value of the conversation is meant for
                return None
        value = self._meant(name, schema)
        if value is None and self.u.elliptical:
            value = self.previous.get(name)
        self._memo[key] = value
        return value

    def _meant(self, name: str, schema: Any) -> Any:
        if not self.tool or name.lower().endswith("id"):  # a format, or an id to pass on
            for result in reversed(self.results):  # a value a tool returned under this name
                if name in result and not isinstance(result[name], (dict, list)):
                    return result[name]
        if isinstance(schema, Mapping) and "enum" in schema:
            return self._enum(name, schema)
        types = _types(schema)
        fmt = schema.get("format") if isinstance(schema, Mapping) else None
        if types & {"integer", "number"} and not types & {"string"}:
            return self._number(name, schema)
        if "array" in types:
            return self._array(name, schema)
        if types and not types & {"string"}:
            return None
        return self._string(name, _description(schema), fmt)

    # -- by type -------------------------------------------------------------------------------

    def _enum(self, name: str, schema: Mapping[str, Any]) -> Any:
        options = [o for o in schema["enum"] if isinstance(o, str)]
        text = self.u.text.lower()
        said = said_words(text)
        for option in options:
            if option.lower() in said or (" " in option and has_phrase(text, option.lower())):
                return option
        for option in options:
            for unit, words in _UNIT_WORDS.items():
                if option.lower() in words and (unit in said or f"°{unit[0]}" in text):
                    return option
        e = self.u.entities
        for option in options:
            if option.upper() in e.currencies or option.capitalize() in e.languages:
                return option
        mood = sentiment(text)
        for option in options:
            if option.lower() in MOODS[mood]:
                return option
        return None

    def _number(self, name: str, schema: Mapping[str, Any]) -> Any:
        tokens = set(name_tokens(name))
        e, math = self.u.entities, self.u.arithmetic
        operands = math.operands if math is not None else e.numbers
        integer = "integer" in _types(schema)
        value: float | None = None
        if tokens & _FIRST and operands:
            value = operands[0]
        elif tokens & _SECOND and len(operands) > 1:
            value = operands[1]
        elif tokens & {"amount", "value", "quantity", "sum"} and e.amounts:
            value = e.amounts[0][0]
        elif tokens & {"amount"} and "currency" in self.about and len(e.currencies) >= 2:
            value = 1  # "the rate from GBP to JPY": one unit
        elif tokens & {"number", "n", "value", "x", "input"} and operands:
            value = operands[0]
        elif tokens & {"quantity", "qty", "count", "units", "items"} and e.numbers:
            value = e.numbers[0]
        elif tokens & {"age"} and (m := re.search(r"\b(?:is|aged|age)\s+(\d{1,3})\b", self.u.text)):
            value = float(m.group(1))
        else:
            numbered = counted(self.u.text)
            for word in tokens:  # "3 days", "2 adults"
                if word in numbered:
                    value = float(numbered[word])
                    break
        if value is None:
            return None
        if integer:
            return int(value) if float(value).is_integer() else None
        return int(value) if float(value).is_integer() else value

    def _array(self, name: str, schema: Mapping[str, Any]) -> Any:
        tokens = set(name_tokens(name))
        items = schema.get("items") if isinstance(schema.get("items"), Mapping) else {}
        item_types = _types(items)
        e, math = self.u.entities, self.u.arithmetic
        if item_types & {"number", "integer"}:
            values = math.operands if math is not None else e.numbers
            if values:
                whole = "integer" in item_types
                return [int(v) if whole or v.is_integer() else v for v in values]
            return None
        if tokens & {"to", "recipients", "emails", "cc"} or "email" in self.about:
            return list(e.emails) or None
        if tokens & {"attendees", "participants", "people", "invitees", "guests"}:
            return list(e.emails or e.people) or None
        if tokens & {"tickers", "symbols"}:
            return list(e.tickers) or None
        if tokens & {"cities", "locations", "places"}:
            return list(e.places) or None
        return None

    def _date(self, tokens: set[str]) -> str | None:
        dates = self.u.entities.dates
        if not dates:
            return None
        second = tokens & {"return", "end", "checkout", "until", "to"}
        day: datetime.date = dates[1] if second and len(dates) > 1 else dates[0]
        return day.isoformat()

    def _string(self, name: str, description: str, fmt: Any) -> str | None:
        tokens = set(name_tokens(name))
        desc = description.lower()
        e, u, about = self.u.entities, self.u, self.about
        nth = self.pick
        if (
            fmt in ("email", "idn-email")
            or tokens & {"email", "recipient", "cc"}
            or ("to" in tokens and "email" in about)
        ):
            return e.emails[nth % len(e.emails)] if e.emails else None
        if fmt in ("uri", "url") or tokens & {"url", "link", "href", "website"}:
            return e.urls[0] if e.urls else None
        if fmt == "date" or tokens & {"date", "day"} or "yyyy-mm-dd" in desc:
            return self._date(tokens)
        if fmt == "date-time" or (tokens & {"datetime", "start", "when", "timestamp"} and e.dates):
            if e.dates:
                clock = e.times[0] if e.times else "09:00"
                return f"{e.dates[0].isoformat()}T{clock}:00"
            return None
        if fmt == "time" or tokens & {"time", "hour"}:
            return e.times[0] if e.times else None
        if "currency" in about or tokens & {"currency", "base", "quote"}:
            codes = list(dict.fromkeys([*(c for _, c in e.amounts if c), *e.currencies]))
            if codes and tokens & (_ORIGIN | {"base", "currency"}) and not tokens & _DESTINATION:
                return codes[0]
            if len(codes) > 1 and tokens & (_DESTINATION | {"quote"}):
                return codes[1]
        if tokens & {"ticker", "symbol", "stock", "company"}:
            return e.tickers[nth % len(e.tickers)] if e.tickers else None
        if tokens & {"language", "lang", "locale"} or ("to" in tokens and "translate" in about):
            if not e.languages:
                return None
            lang = e.languages[0]
            code = "code" in tokens or "code" in desc or "iso" in desc
            return LANGUAGE_CODES.get(lang, lang[:2].lower()) if code else lang
        if "travel" in about or tokens & (_ORIGIN | _DESTINATION) - {"to", "from"}:
            if tokens & _ORIGIN:
                first = e.places[0] if e.places and e.places[0] != e.destination else None
                return e.origin or first
            if tokens & _DESTINATION:
                fallback = e.places[1] if len(e.places) > 1 else None
                return e.destination or fallback
        if tokens & _PLACE:
            if e.places:
                return e.places[nth % len(e.places)]
            return None
        if tokens & {"path", "file", "filename", "filepath"} and not tokens & {"dir", "directory"}:
            return path(u.text)
        if tokens & {"customer", "company", "organization", "organisation", "org", "vendor"}:
            return e.orgs[0] if e.orgs else (e.people[0] if e.people else None)
        if tokens & {"item", "product", "goods", "sku"}:
            m = re.search(r"\b\d+\s+([a-z][a-z-]+?)(?:e?s)?\b(?:\s+(?:for|of|to)\b|[,.]|$)", u.text)
            return m.group(1) if m else None
        if tokens & {"expression", "expr", "formula", "equation"} and u.arithmetic is not None:
            return expression(u)
        if tokens & {"word", "term"} and "define" in about:
            return e.quoted[0] if e.quoted else (u.topic or None)
        if "translate" in about and tokens & (_BODY | {"source", "input", "phrase"}):
            return translate_text(u)
        if tokens & _PERSON or (
            tokens & {"name", "fullname"} and e.people and not about - {"contact"}
        ):
            return e.people[nth % len(e.people)] if e.people else None
        if tokens & {"subject"}:
            return subject(u)
        if tokens & _BODY and "email" in about and self.summary:
            return self.summary  # passing on what the tools found
        if tokens & _BODY and u.said:
            return u.said
        if tokens & _TITLE and ("calendar" in about or not self.tool):
            return title(u)
        if tokens & _QUERY:
            return u.topic or query(u)
        return None


def missing(filler: Filler, parameters: Any) -> list[str]:
    """The required properties of a tool the conversation must give and does not (an e-mail
    address to write to, the place to check, the ticker), by name."""
    if not isinstance(parameters, Mapping):
        return []
    props = parameters.get("properties") or {}
    out = []
    for name in parameters.get("required") or ():
        sub = props.get(name)
        if not isinstance(sub, Mapping) or "enum" in sub or "default" in sub:
            continue
        tokens = set(name_tokens(name))
        fmt = sub.get("format")
        asks_user = (
            fmt in ("email", "idn-email")
            or tokens & ({"email", "recipient", "ticker", "symbol"} | _PLACE | _ORIGIN)
            or ("to" in tokens and "email" in filler.about)
        )
        if asks_user and filler(name, sub) is None:
            out.append(name)
    return out
