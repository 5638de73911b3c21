# Owns how the default model states what a (non-shell) tool returned: the output read as JSON
# where it is JSON, its values found by the names tools give them (temperature, condition,
# price, converted amount, status, error) and said in a sentence of the tool's domain ("It is
# 18 °C and sunny in Paris."); other objects as their fields in words, lists by how many and
# the first few, plain text by its first lines. Pure.
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import orjson

from rollout.model.understand import Understanding
from rollout.model.understand.arith import number_text
from rollout.model.understand.text import concepts_of_name, name_tokens

__all__ = ["parsed", "state"]

_TEMPERATURE: Final = ("temperature", "temp", "temp_c", "temperature_c", "temp_f", "degrees")
_CONDITION: Final = ("condition", "conditions", "description", "summary", "weather", "sky")
_PRICE: Final = ("price", "last", "close", "current_price", "value", "quote")
_RESULT: Final = ("result", "answer", "value", "product", "sum", "total", "output")
_CONVERTED: Final = ("converted", "converted_amount", "result", "amount_out", "value", "total")


def parsed(output: str) -> Any:
    """A tool output as JSON, or the text itself."""
    text = output.strip()
    if text[:1] in "{[" or re.fullmatch(r"-?\d+(?:\.\d+)?", text):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            return text
    return text


def _get(d: Mapping[str, Any], names: Sequence[str]) -> Any:
    lowered = {k.lower(): v for k, v in d.items()}
    for name in names:
        if name in lowered and not isinstance(lowered[name], (dict, list)):
            return lowered[name]
    return None


def _value(v: Any) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (int, float)):
        return number_text(v)
    if v is None:
        return "none"
    return str(v)


def _words(key: str) -> str:
    return " ".join(name_tokens(key)) or key


def _args(arguments: str) -> dict[str, Any]:
    try:
        value = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def state(tool: str, arguments: str, output: str, u: Understanding) -> str:
    """A sentence (or a few) saying what a call of `tool` returned."""
    value = parsed(output)
    args = _args(arguments)
    about = concepts_of_name(tool)
    if isinstance(value, Mapping):
        error = _get(value, ("error", "error_message", "detail"))
        if error is not None and len(value) <= 3:
            return f"The {_words(tool)} call failed: {_value(error)}."
        lists = [v for v in value.values() if isinstance(v, list)]
        if len(lists) == 1 and all(
            not isinstance(v, list) for v in value.values() if v is not lists[0]
        ):
            if not any(k in value for k in (*_TEMPERATURE, *_PRICE, *_CONVERTED)):
                return _listing(tool, lists[0], args, about)
        for domain, say in _DOMAINS:
            if domain in about:
                said = say(value, args, u)
                if said:
                    return said
        return _fields(tool, value)
    if isinstance(value, list):
        return _listing(tool, value, args, about)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "math" in about and u.arithmetic is not None:
            return f"{_capital(u.arithmetic.words)} is {number_text(value)}."
        return f"The {_words(tool)} result is {number_text(value)}."
    text = str(value).strip()
    if not text:
        return f"The {_words(tool)} call returned nothing."
    if "translate" in about:
        lang = args.get("target_language") or args.get("language") or args.get("target") or ""
        said = _line(text).strip("\"'").rstrip(".")
        return f'In {lang}, that is "{said}".' if lang else f'The translation is "{said}".'
    return f"The {_words(tool)} tool says: {_line(text, 240)}"


def _line(text: str, limit: int = 160) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    out = " ".join(lines)
    out = out if len(out) <= limit else out[:limit].rsplit(" ", 1)[0] + "..."
    return out if out[-1:] in '.!?"' else out + ("" if out.endswith("...") else ".")


def _capital(s: str) -> str:
    return s[:1].upper() + s[1:]


def _fields(tool: str, value: Mapping[str, Any]) -> str:
    flat = [(k, v) for k, v in value.items() if not isinstance(v, (dict, list))][:6]
    if not flat:
        return f"The {_words(tool)} call returned {len(value)} fields."
    parts = [f"{_words(k)} {_value(v)}" for k, v in flat]
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"The {_words(tool)} result: {listed}."


def _listing(tool: str, items: list[Any], args: dict[str, Any], about: frozenset[str]) -> str:
    if not items:
        return f"The {_words(tool)} call found nothing."
    if "travel" in about and all(isinstance(i, Mapping) for i in items):
        return _flights(items, args)
    shown = []
    for item in items[:3]:
        if isinstance(item, Mapping):
            label = _get(item, ("name", "title", "summary", "id", "airline"))
            shown.append(_value(label) if label is not None else _fields("item", item)[16:-1])
        else:
            shown.append(_value(item))
    more = f", and {len(items) - 3} more" if len(items) > 3 else ""
    return f"The {_words(tool)} call found {len(items)}: {'; '.join(shown)}{more}."


def _flights(items: list[Any], args: dict[str, Any]) -> str:
    route = ""
    origin = _get(args, ("origin", "from", "departure", "source"))
    dest = _get(args, ("destination", "to", "arrival"))
    if origin and dest:
        route = f" from {origin} to {dest}"
    day = _get(args, ("date", "departure_date", "day"))
    on = f" on {day}" if day else ""
    priced = [i for i in items if isinstance(_get(i, ("price", "fare", "cost")), (int, float))]
    n = len(items)
    lead = f"I found {n} flight{'s' if n != 1 else ''}{route}{on}."
    if priced:
        best = min(priced, key=lambda i: _get(i, ("price", "fare", "cost")))
        name = " ".join(
            _value(v)
            for v in (_get(best, ("airline", "carrier")), _get(best, ("flight", "number")))
            if v is not None
        )
        price = number_text(_get(best, ("price", "fare", "cost")))
        when = _get(best, ("departure", "depart", "time", "departs"))
        at = f", leaving at {when}" if when else ""
        return f"{lead} The cheapest is {name or 'one'} at ${price}{at}."
    return lead


def _weather(v: Mapping[str, Any], args: dict[str, Any], u: Understanding) -> str | None:
    temp = _get(v, _TEMPERATURE)
    cond = _get(v, _CONDITION)
    if temp is None and cond is None:
        return None
    place = _get(v, ("city", "location", "place", "name")) or _get(args, ("city", "location"))
    unit = str(_get(v, ("unit", "units", "scale")) or "").lower()
    symbol = (
        "°F" if unit.startswith(("f", "imperial")) else "°C" if unit or temp is not None else ""
    )
    if isinstance(temp, (int, float)):
        temp_text = f"{number_text(temp)} {symbol}".strip()
    else:
        temp_text = _value(temp) if temp is not None else ""
    where = f" in {place}" if place else ""
    if temp_text and cond:
        out = f"It is {temp_text} and {str(cond).lower()}{where}."
    elif temp_text:
        out = f"It is {temp_text}{where}."
    else:
        out = f"It is {str(cond).lower()}{where}."
    humidity = _get(v, ("humidity",))
    wind = _get(v, ("wind", "wind_speed", "wind_kph", "wind_mph"))
    extra = []
    if humidity is not None:
        extra.append(f"humidity is {_value(humidity)}{'%' if isinstance(humidity, int) else ''}")
    if wind is not None:
        extra.append(f"the wind is {_value(wind)}")
    if extra:
        out += " " + _capital(" and ".join(extra)) + "."
    return out


def _math(v: Mapping[str, Any], args: dict[str, Any], u: Understanding) -> str | None:
    result = _get(v, _RESULT)
    if result is None:
        return None
    if u.arithmetic is not None:
        return f"{_capital(u.arithmetic.words)} is {_value(result)}."
    return f"The result is {_value(result)}."


def _stock(v: Mapping[str, Any], args: dict[str, Any], u: Understanding) -> str | None:
    price = _get(v, _PRICE)
    if price is None:
        return None
    ticker = _get(v, ("ticker", "symbol")) or _get(args, ("ticker", "symbol")) or "The stock"
    currency = _get(v, ("currency",))
    money = f"${_value(price)}" if currency in (None, "USD") else f"{_value(price)} {currency}"
    out = f"{ticker} is trading at {money}."
    change = _get(v, ("change_percent", "change_pct", "change"))
    if isinstance(change, (int, float)):
        direction = "up" if change >= 0 else "down"
        pct = "%" if "percent" in str(v) or "pct" in str(v) else ""
        out += f" It is {direction} {number_text(abs(change))}{pct} today."
    return out


def _currency(v: Mapping[str, Any], args: dict[str, Any], u: Understanding) -> str | None:
    converted = _get(v, _CONVERTED)
    if converted is None:
        return None
    amount = _get(args, ("amount", "value", "quantity"))
    source = _get(args, ("from", "from_currency", "source", "base"))
    target = _get(v, ("to", "currency", "to_currency")) or _get(
        args, ("to", "to_currency", "target", "quote")
    )
    rate = _get(v, ("rate", "exchange_rate"))
    head = f"{_value(amount)} {source} is" if amount is not None and source else "That is"
    out = f"{head} {_value(converted)} {target or ''}".rstrip() + "."
    if rate is not None:
        out += f" The rate is {_value(rate)}."
    return out


def _email(v: Mapping[str, Any], args: dict[str, Any], u: Understanding) -> str | None:
    status = str(_get(v, ("status", "result", "sent", "ok", "success")) or "").lower()
    to = _get(args, ("to", "recipient", "email")) or _get(v, ("to", "recipient"))
    if status in ("sent", "ok", "success", "yes", "true", "queued", "delivered", "1"):
        subject = _get(args, ("subject",))
        about = f' with the subject "{subject}"' if subject else ""
        return f"I've sent the email to {to}{about}." if to else "The email has been sent."
    return None


def _calendar(v: Mapping[str, Any], args: dict[str, Any], u: Understanding) -> str | None:
    title = _get(args, ("title", "summary", "name", "event")) or _get(v, ("title", "summary"))
    day = _get(args, ("date", "day", "start")) or _get(v, ("date", "start"))
    clock = _get(args, ("time", "start_time")) or _get(v, ("time",))
    if title is None and day is None:
        return None
    when = f" on {day}" if day else ""
    when += f" at {clock}" if clock else ""
    return f'I\'ve added "{title or "the event"}" to your calendar{when}.'


def _translation(v: Mapping[str, Any], args: dict[str, Any], u: Understanding) -> str | None:
    text = _get(v, ("translation", "translated", "translated_text", "text", "result", "output"))
    if text is None:
        return None
    lang = _get(args, ("target_language", "language", "target", "to", "lang"))
    lang = lang or _get(v, ("language", "target_language", "to"))
    said = str(text).strip().strip("\"'")
    return f'In {lang}, that is "{said}".' if lang else f'The translation is "{said}".'


_DOMAINS: Final = (
    ("translate", _translation),
    ("weather", _weather),
    ("math", _math),
    ("stock", _stock),
    ("currency", _currency),
    ("email", _email),
    ("calendar", _calendar),
)
