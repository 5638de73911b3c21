# Which of the offered function tools the default model calls, as a model would choose: ranked
# by how well each one's name and description match the latest user message, a shell or exec
# tool first for a coding prompt, and tools that need a person or a persistent state (asking the
# user, goals, plans, a running session's stdin) left alone unless the prompt asks for them.
# Ties keep the order the request declared the tools in. Pure: no I/O, no clocks.
from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

import attrs

from protocol.items import FunctionTool
from rollout.model.grounding import STOPWORDS, Grounding

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
    if name & _WRITE_TOKENS:
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
    """How well the tool's name (3 per word) and description (1 per word) match the prompt's
    content words."""
    prompt = {_stem(w) for w in g.words} | {_stem(p.lower()) for p in g.places}
    if not prompt:
        return 0.0
    name = {_stem(t) for t in _tokens(tool.name) if t not in STOPWORDS}
    desc = {_stem(t) for t in _tokens(tool.description or "")[:80] if t not in STOPWORDS}
    return 3.0 * len(prompt & name) + 1.0 * len(prompt & (desc - name))


def rank_tools(tools: Iterable[FunctionTool], g: Grounding) -> list[Ranked]:
    """The tools the model would use for this prompt, best first (ties in declared order).

    A coding prompt puts shell tools first; a read-only request (no fix, write or edit) puts
    tools that change files last. Tools the prompt gives no reason to use are left out only
    when their kind needs a person or a state the conversation does not have."""
    ranked = []
    for tool in tools:
        kind = kind_of(tool)
        if not _allowed(kind, g):
            continue
        score = relevance(tool, g)
        if kind == "shell" and g.coding:
            score += 10.0
        if kind == "write" and not g.asks("write"):
            score -= 5.0
        if kind == "patch":  # the file editor: first when files are to be written, else last
            score += 12.0 if g.asks("write") and g.coding else -5.0
        ranked.append(Ranked(tool, score, kind))
    order = {id(r): i for i, r in enumerate(ranked)}
    return sorted(ranked, key=lambda r: (-r.score, order[id(r)]))


def candidates(ranked: list[Ranked]) -> list[Ranked]:
    """The tools worth calling: the relevant ones (a shell tool alone when it leads, since a
    coding agent does its work through it), or all of them when none is relevant."""
    if not ranked:
        return []
    if ranked[0].kind == "shell" and ranked[0].score >= 10.0:
        return [ranked[0]]
    relevant = [r for r in ranked if r.score > 0]
    return relevant or [r for r in ranked if r.score == ranked[0].score] or ranked
