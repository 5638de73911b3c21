# Which of the offered function tools the default model calls, as a model would choose: ranked
# by how well each one's name and description match the latest user message, a shell or exec
# tool first for a coding prompt, and tools that need a person or a persistent state (asking the
# user, goals, plans, a running session's stdin) left alone unless the prompt asks for them.
# A tool the prompt gives no reason to use is not called at all. Ties keep the order the
# request declared the tools in. Pure: no I/O, no clocks.
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

import attrs

from protocol.items import FunctionTool
from rollout.model.grounding import STOPWORDS, Grounding
from rollout.model.understand.text import concepts_of_name

__all__ = ["Ranked", "kind_of", "rank_tools", "shell_tool"]

_SHELL_NAMES: Final = frozenset(
    {"exec_command", "shell", "local_shell", "bash", "run_shell_command", "run_command"}
    | {"execute_command", "terminal", "run_terminal_cmd", "exec", "sh", "container_exec"}
)
_SHELL_TOKENS: Final = frozenset({"exec", "shell", "bash", "terminal", "cmd", "command"})
_PERSON_TOKENS: Final = frozenset(
    {"ask", "question", "questions", "confirm", "approval", "approve", "clarify", "human"}
)
_STATE_TOKENS: Final = frozenset({"goal", "goals", "plan", "todo", "todos", "memory", "remember"})
_SESSION_TOKENS: Final = frozenset({"stdin", "session", "kill", "terminate", "interrupt"})
_IMAGE_TOKENS: Final = frozenset({"image", "screenshot", "picture", "photo"})
_WRITE_TOKENS: Final = frozenset(
    {"write", "edit", "patch", "delete", "remove", "create", "update", "rename", "move", "apply"}
)


_FILE_TOKENS: Final = frozenset(
    {"file", "files", "path", "dir", "directory", "folder", "code", "repo", "text", "line"}
    | {"lines", "patch", "content", "contents"}
)


def _tokens(text: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", text)
    return [t for t in re.split(r"[^a-z0-9]+", spaced.lower()) if t]


def _stem(word: str) -> str:
    for suffix in ("ing", "ies", "es", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + ("y" if suffix == "ies" else "")
    return word


def kind_of(tool: FunctionTool) -> str:
    """shell, person (asks the user), state (goals, plans, memory), session (a running
    process's stdin), image, patch (apply_patch: edits files), write (changes files), or
    other."""
    if tool.name == "apply_patch":
        return "patch"
    name = set(_tokens(tool.name))
    desc = (tool.description or "").lower()
    required = (tool.parameters or {}).get("required") or []
    if name & _PERSON_TOKENS or "user_input" in tool.name or "ask the user" in desc:
        return "person"
    if name & _SESSION_TOKENS or "session_id" in required:
        return "session"
    if name & _STATE_TOKENS:
        return "state"
    if tool.name in _SHELL_NAMES or (name & _SHELL_TOKENS and "command" in desc):
        return "shell"
    if name & _IMAGE_TOKENS:
        return "image"
    if name & _WRITE_TOKENS and (name & _FILE_TOKENS or "file" in desc):
        return "write"
    return "other"


def shell_tool(tool: FunctionTool) -> bool:
    return kind_of(tool) == "shell"


#: Kinds of tool the model uses only when the prompt asks for something (Grounding.asks).
_NEEDS = {"person": "person", "state": "plan", "image": "image"}


def _allowed(kind: str, g: Grounding) -> bool:
    """Whether the prompt lets the model use a tool of this kind at all."""
    if kind == "session":
        return False  # it continues a process a call started; the model has none running
    need = _NEEDS.get(kind)
    return need is None or g.asks(need)


@attrs.frozen
class Ranked:
    tool: FunctionTool
    score: float
    kind: str


def relevance(tool: FunctionTool, g: Grounding) -> float:
    """How well the tool fits the prompt: its name's words (3 each) and description's (1 each)
    that the prompt uses, and what both are about (4 per concept of understand.lexicon shared
    by the prompt and the tool's name, 2 per one shared only with its description: "times"
    and `multiply` are both arithmetic, an e-mail address and `send_email` both e-mail)."""
    prompt = {_stem(w) for w in g.words} | {_stem(p.lower()) for p in g.places}
    name = {_stem(t) for t in _tokens(tool.name) if t not in STOPWORDS}
    desc = {_stem(t) for t in _tokens(tool.description or "")[:80] if t not in STOPWORDS}
    score = 3.0 * len(prompt & name) + 1.0 * len(prompt & (desc - name))
    u = g.understanding
    math = u.arithmetic
    if name & _ANY_OP or "math" in concepts_of_name(tool.name):
        if math is None and len(u.entities.numbers) < 2:
            return 0.0  # "add a meeting" needs no calculator
        if math is not None and _OPS.get(math.op, set()).isdisjoint(name) and name & _ANY_OP:
            return 0.0  # `multiply` is not for "12 minus 5"
    else:
        verbs = _ACTS.get(next(iter(_tokens(tool.name)), ""))
        asked = u.asked
        emailing = verbs is _SEND and _EMAIL_VERB.search(u.text)
        if verbs is not None and not verbs & asked and not emailing:
            return 0.0  # `send_email` is for sending one, not for a question about e-mail
    about = u.concepts
    if about:
        by_name = concepts_of_name(tool.name)
        by_desc = concepts_of_name(" ".join(_tokens(tool.description or "")[:80])) - by_name
        score += 4.0 * len(about & by_name) + 2.0 * len(about & by_desc)
    return score


#: Tools named for one arithmetic operation (stemmed name words), by the operation.
_OPS: Final = {
    "multiply": {"multiply", "multiplication", "times", "product", "mul"},
    "add": {"add", "sum", "plu", "addition"},
    "sum": {"add", "sum", "plu", "addition"},
    "subtract": {"subtract", "minu", "sub", "difference"},
    "divide": {"divide", "div", "quotient", "division"},
    "power": {"power", "pow", "exponent"},
    "sqrt": {"sqrt", "root"},
}
_ANY_OP: Final = frozenset().union(*_OPS.values())

#: Tools that act (send, create, book, delete) by their name's first word, and the words of
#: a prompt that ask for the act.
_SEND: Final = frozenset({"send", "mail", "write", "tell", "message", "notify", "forward", "reply"})
_CREATE: Final = frozenset(
    {"create", "add", "schedule", "book", "set", "put", "make", "plan", "arrange", "new", "remind"}
)
_ACTS: Final = {
    "send": _SEND,
    "email": _SEND,
    "create": _CREATE,
    "add": _CREATE | {"plus", "sum"},
    "schedule": _CREATE,
    "book": _CREATE | {"reserve"},
    "delete": frozenset({"delete", "remove", "cancel", "drop", "clear"}),
    "cancel": frozenset({"cancel", "delete", "remove", "call off"}),
    "post": frozenset({"post", "publish", "share", "tweet"}),
    "buy": frozenset({"buy", "order", "purchase"}),
    "transfer": frozenset({"transfer", "send", "pay", "move"}),
}
#: "Email bob@...", "email it to ...": e-mail as the verb.
_EMAIL_VERB: Final = re.compile(
    r"(?:^|[.!?]\s+|\band\s+|\bplease\s+)e-?mail\b|\be-?mail\s+(?:it|this|that|him|her|them)\b",
    re.I,
)

#: Words that ask for a shell even outside a coding prompt ("run the steps").
_RUN_WORDS: Final = frozenset(
    {"shell", "terminal", "bash", "command", "commands", "run", "execute", "exec", "script"}
)

#: The least score of a tool worth calling: one word of its name, a concept, or two words of
#: its description (one shared word alone is chance: "current" in a price and a weather tool).
RELEVANT: Final = 2.0


def rank_tools(tools: Iterable[FunctionTool], g: Grounding) -> list[Ranked]:
    """The tools the model would use for this prompt, best first (ties in declared order).

    A coding prompt puts shell tools first; a read-only request (no fix, write or edit) puts
    tools that change files last. Tools the prompt gives no reason to use are left out only
    when their kind needs a person or a state the conversation does not have."""
    scored = []
    for tool in tools:
        kind = kind_of(tool)
        if _allowed(kind, g):
            scored.append((tool, kind, relevance(tool, g)))
    # A tool made for the subject (read_file for a path, send_email for an address) beats the
    # shell a coding prompt would otherwise go to.
    fitting = max((sc for _, kind, sc in scored if kind not in ("shell", "patch")), default=0.0)
    ranked = []
    said = set(g.understanding.words)
    asked_for_shell = bool(said & _RUN_WORDS)
    for tool, kind, score in scored:
        if kind == "shell" and (asked_for_shell or (g.coding and fitting < 4.0)):
            score += 10.0
        elif kind == "shell" and not g.coding:
            score = 0.0  # a shell is for work on files and commands
        if kind == "write" and not g.asks("write"):
            score -= 5.0
        if kind == "patch":  # the file editor: first when files are to be written, else last
            score += 12.0 if g.asks("write") and g.coding else -5.0
        ranked.append(Ranked(tool, score, kind))
    order = {id(r): i for i, r in enumerate(ranked)}
    return sorted(ranked, key=lambda r: (-r.score, order[id(r)]))


def candidates(ranked: list[Ranked]) -> list[Ranked]:
    """The tools worth calling: a shell tool alone when it leads (a coding agent does its work
    through it), else those relevant to the prompt that score at least half the best; none when
    no tool fits (a model answers without one)."""
    if not ranked:
        return []
    if ranked[0].kind == "shell" and ranked[0].score >= 10.0:
        return [ranked[0]]
    best = ranked[0].score
    return [r for r in ranked if r.score >= RELEVANT and r.score >= best / 2]
