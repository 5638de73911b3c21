# Owns how the default model uses what it understood of the conversation when it acts: the
# Filler for a tool's arguments (rollout.model.understand.fill, fed with the JSON the tools
# returned), what makes a call a repeat of one already made (the same tool with the same meant
# values, since the prompt or in an earlier turn), the question back when a required value is
# missing, and the sentence of commentary before a
# call, taken from the call's own arguments. Pure: no I/O, no clocks.
from __future__ import annotations

from collections.abc import Mapping
from random import Random
from typing import Any

import orjson

from protocol.items import FunctionTool
from rollout.model.grounding import Grounding
from rollout.model.understand.fill import Filler, missing
from rollout.model.understand.results import parsed, state
from rollout.model.understand.text import concepts_of_name, name_tokens

__all__ = ["ask_back", "commentary", "filler", "made_keys", "meant_key"]


def filler(tool: FunctionTool | None, g: Grounding, pick: int = 0) -> Filler:
    """The Filler for `tool`'s arguments (None: the response format's), with what it reads
    only where its properties can use it: the JSON objects the tools returned (for a format,
    or for ids passed on), the tool's own earlier arguments (for an elliptical follow-up) and
    the results in words (for a message that passes them on)."""
    names = list(_properties(tool)) if tool is not None else []
    results = []
    if tool is None or any(n.lower().endswith("id") for n in names):
        for obs in (*g.history, *g.observations):
            value = parsed(obs.output)
            if isinstance(value, Mapping):
                results.append(value)
    about = f"{tool.name} {tool.description or ''}" if tool is not None else ""
    u = g.understanding
    previous: Mapping[str, Any] = {}
    for obs in reversed(g.history if u.elliptical else ()):
        if tool is not None and obs.tool == tool.name:
            try:
                args = orjson.loads(obs.arguments)
            except orjson.JSONDecodeError:
                args = {}
            previous = args if isinstance(args, dict) else {}
            break
    told = []
    if tool is not None and "email" in concepts_of_name(about):
        told = [
            state(o.tool, o.arguments, o.output, u)
            for o in g.observations
            if o.command is None and o.tool != tool.name
        ]
    return Filler(u, about, tuple(results), pick, previous, " ".join(told) or None)


def _properties(tool: FunctionTool) -> Mapping[str, Any]:
    params = tool.parameters or {}
    props = params.get("properties") if isinstance(params, Mapping) else None
    return props if isinstance(props, Mapping) else {}


def meant_key(tool: FunctionTool, arguments: str, g: Grounding) -> tuple[str, str]:
    """What a call means: the tool and the values of its arguments that the conversation
    gives (a second call with other made-up extras is still a repeat)."""
    fill = filler(tool, g)
    names = [n for n, sub in _properties(tool).items() if fill(n, sub) is not None]
    try:
        args = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return tool.name, arguments
    if not isinstance(args, dict):
        return tool.name, arguments
    kept = {n: args[n] for n in names if n in args}
    return tool.name, orjson.dumps(kept, option=orjson.OPT_SORT_KEYS).decode()


def made_keys(tools: Mapping[str, FunctionTool], g: Grounding) -> set[tuple[str, str]]:
    """The meant keys of the calls made since the prompt and in the earlier turns read."""
    keys = set()
    for obs in (*g.history, *g.observations):
        tool = tools.get(obs.tool)
        if tool is not None and obs.command is None:
            keys.add(meant_key(tool, obs.arguments, g))
    return keys


def ask_back(tool: FunctionTool, g: Grounding) -> str | None:
    """The question a model asks instead of calling `tool`, when the prompt lacks a value only
    the user can give (the place, the address, the ticker); None when nothing is missing."""
    gaps = missing(filler(tool, g), tool.parameters)
    if not gaps:
        return None
    tokens = set(name_tokens(gaps[0]))
    about = concepts_of_name(f"{tool.name} {tool.description or ''}")
    if tokens & {"city", "location", "place", "where", "town", "region", "country"}:
        if "weather" in about:
            return "Which city would you like the weather for?"
        return "Which place do you mean?"
    if tokens & {"email", "recipient", "to"}:
        return "Sure. What e-mail address should I send it to?"
    if tokens & {"origin", "from", "departure", "source", "start", "src", "depart"}:
        return "Where will you be flying from?"
    if tokens & {"ticker", "symbol"}:
        return "Which stock do you mean? A company name or ticker symbol is enough."
    words = " ".join(name_tokens(gaps[0]))
    return f"Could you tell me the {words} to use?"


def commentary(tool: FunctionTool, arguments: str, rng: Random) -> str:
    """One sentence before a call of `tool`, naming what its arguments say."""
    try:
        args = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        args = {}
    args = args if isinstance(args, dict) else {}
    about = concepts_of_name(f"{tool.name}")

    def arg(*names: str) -> Any:
        lowered = {k.lower(): v for k, v in args.items()}
        return next((lowered[n] for n in names if n in lowered), None)

    if "weather" in about and (place := arg("city", "location", "place")):
        return rng.choice((f"Let me check the weather in {place}.", f"I'll look up {place}."))
    if "math" in about:
        return rng.choice(("Let me work that out.", "I'll calculate that."))
    if "email" in about and (to := arg("to", "recipient", "email")):
        return f"I'll send that e-mail to {to}."
    if "stock" in about and (ticker := arg("ticker", "symbol")):
        return f"Let me look up the latest price for {ticker}."
    if "currency" in about and (amount := arg("amount")) is not None:
        return f"I'll convert {amount} {arg('from', 'from_currency', 'base') or ''}".rstrip() + "."
    if "travel" in about and (dest := arg("destination", "to", "arrival")):
        origin = arg("origin", "from", "departure")
        route = f"from {origin} to {dest}" if origin else f"to {dest}"
        return f"Let me search for flights {route}."
    if "calendar" in about:
        return "I'll add that to your calendar."
    if "translate" in about and (lang := arg("target_language", "language", "target", "to")):
        return f"I'll translate that into {lang}."
    subject = next((v for v in args.values() if isinstance(v, str) and 0 < len(v) <= 40), None)
    action = " ".join(name_tokens(tool.name)) or "the tool"
    if subject:
        return rng.choice((f"Let me look up {subject}.", f"I'll check {subject}."))
    return rng.choice((f"Let me {action}.", "Let me look that up."))
