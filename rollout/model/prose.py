# What the default model writes: a sentence of commentary before its tool calls, saying what it
# is about to do, and a final answer in sentences grounded in what the tools returned (files
# listed, how many, the first line of what it read, a test summary, an exit code), padded or cut
# to about the profile's answer length. Deterministic for a given `random.Random`. Pure.
from __future__ import annotations

import re
from random import Random
from typing import Final

from rollout.conversation import tokens as tok
from rollout.model.grounding import LONE_PATH, Grounding, Observation, exit_code, listed

__all__ = ["answer", "commentary"]

_CLOSERS: Final = (
    "I only read files and changed nothing.",
    "Nothing was modified along the way.",
    "Tell me if you want me to open any of these in more detail.",
    "I can dig further into any of them if that helps.",
    "Everything above comes straight from the command output.",
)
_NO_TOOLS: Final = (
    "I could not check this with a tool here, so this answer rests on the question alone.",
    "Without a tool to look {topic} up, I can only answer in general terms.",
    "If you can share more detail about {topic}, I can give a more specific answer.",
    "The short version: it depends on the details of {topic}.",
    "A good next step would be to look at {topic} directly and compare the results.",
)


def commentary(g: Grounding, tool: str, command: str | None, rng: Random) -> str:
    """One sentence before a call: what the model is about to do and why."""
    if command is not None:
        return _shell_commentary(command, rng)
    subject = (g.places or g.names or g.words or ("this",))[0]
    options = (
        f"I'll call `{tool}` for {subject} first.",
        f"Let me use `{tool}` to look into {subject}.",
        f"I'll check {subject} with `{tool}`.",
    )
    return rng.choice(options)


def _shell_commentary(command: str, rng: Random) -> str:
    head = command.split()[0] if command.split() else command
    if head == "ls":
        return rng.choice(
            (
                "I'll start by listing what is in the working directory.",
                "Let me look at the directory listing first.",
            )
        )
    if head == "find" or command.startswith("rg --files"):
        return "Now I'll list the files one level down to see the whole layout."
    if head in ("sed", "cat", "head"):
        path = command.split()[-1].strip("'")
        return f"Let me read the top of `{path}`."
    if head == "rg":
        return "I'll search the code for it."
    if head == "pytest":
        return "I'll run the tests to see what fails."
    if head == "git":
        return "Let me check the state of the working tree."
    if head == "wc":
        return "I'll count the lines to see how big it is."
    return f"I'll run `{command}`."


def _names(items: list[str], limit: int = 8) -> str:
    shown = [f"`{i}`" for i in items[:limit]]
    if len(items) > limit:
        shown.append(f"{len(items) - limit} more")
    if len(shown) == 1:
        return shown[0]
    return ", ".join(shown[:-1]) + " and " + shown[-1]


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line[:100]
    return ""


def _about(obs: Observation, g: Grounding) -> str | None:
    """A sentence about one tool result."""
    command = obs.command or ""
    head = command.split()[0] if command.split() else ""
    code = exit_code(obs.output)
    body = obs.output.strip()
    if code not in (None, 0) and head not in ("pytest", "rg", "grep"):
        return f"`{command}` exited with code {code}: {_first_line(body) or 'no output'}."
    if head == "ls":
        files, dirs = listed([obs])
        total = len(files) + len(dirs)
        if total == 0:
            return "The directory listing came back empty." if not body else None
        parts = f"{total} entr{'y' if total == 1 else 'ies'} here: " + _names(
            [*[f"{d}/" for d in dirs], *files]
        )
        return "There are " + parts + "."
    if head == "find" or command.startswith("rg --files"):
        lines = [ln.strip() for ln in body.splitlines() if LONE_PATH.match(ln.strip())]
        if not lines:
            return "The search for files found nothing."
        shown = [ln[2:] if ln.startswith("./") else ln for ln in lines]
        return f"Including subdirectories there are {len(lines)} files: {_names(shown, 6)}."
    if head in ("sed", "cat", "head"):
        path = command.split()[-1].strip("'")
        first = _first_line(body)
        if not first:
            return f"`{path}` is empty."
        n = len(body.splitlines())
        return f'`{path}` starts with "{first}" ({n} line{"s" if n != 1 else ""} read).'
    if head == "wc":
        return f"Line counts: {_first_line(body)}."
    if head == "pytest":
        summary = [ln for ln in body.splitlines() if re.search(r"\b(passed|failed|error)", ln)]
        return f"The test run ended with: {summary[-1].strip()}." if summary else None
    if head == "rg":
        hits = [ln for ln in body.splitlines() if ln.strip()]
        if not hits:
            return "The search found no matches."
        return f"The search found {len(hits)} matching lines, the first being `{hits[0][:80]}`."
    if head == "git":
        first = _first_line(body)
        return f"`{command}` reports: {first}." if first else f"`{command}` printed nothing."
    if command:
        first = _first_line(body)
        return f"`{command}` printed: {first}." if first else f"`{command}` printed nothing."
    first = _first_line(body)
    return f'`{obs.tool}` returned "{first}".' if first else f"`{obs.tool}` returned nothing."


def answer(g: Grounding, rng: Random, tokens: int) -> str:
    """The final answer: a sentence per tool result (the latest first when there are many),
    then closing sentences up to about `tokens` tokens."""
    sentences: list[str] = []
    said: set[str] = set()
    for obs in g.observations[-6:]:
        s = _about(obs, g)
        if s and s not in said:
            sentences.append(s)
            said.add(s)
    if g.searches and not g.observations:
        sentences.append(f"Here is what the sources say about {g.topic}.")
    pool = list(_CLOSERS if g.observations else _NO_TOOLS)
    rng.shuffle(pool)
    if not sentences:
        sentences.append(pool.pop().format(topic=g.topic))
    body = " ".join(sentences)
    while pool and tok.count(body) < tokens * 0.8:
        body += " " + pool.pop().format(topic=g.topic)
    # What the tools returned may run past the length; made-up sentences never do.
    return _cut(body, tokens * (3 if g.observations else 1.5))


def _cut(body: str, tokens: float) -> str:
    """`body` cut at a sentence end to at most `tokens` tokens (never empty)."""
    limit = max(8, int(tokens))
    if tok.count(body) <= limit:
        return body
    out = ""
    for s in re.split(r"(?<=[.!?])\s+", body):
        if out and tok.count(out + " " + s) > limit:
            break
        out = f"{out} {s}".strip()
    return out
