# What the default model writes: a sentence of commentary before its tool calls, saying what it
# is about to do, and a final answer in sentences grounded in what the tools returned (files
# listed, how many, the first line of what it read, a test summary, an exit code), padded or cut
# to about the profile's answer length. Deterministic for a given `random.Random`. Pure.
from __future__ import annotations

import re
from random import Random
from typing import Final

from rollout.conversation import tokens as tok
from rollout.model.grounding import Grounding
from rollout.model.observations import LONE_PATH, Observation, exit_code, listed
from rollout.model.understand.chat import reply
from rollout.model.understand.results import state
from rollout.model.understand.text import concepts_of_name

__all__ = ["answer", "commentary"]

_CLOSERS: Final = (
    "I only read files and changed nothing.",
    "Nothing was modified along the way.",
    "Tell me if you want me to open any of these in more detail.",
    "I can dig further into any of them if that helps.",
    "Everything above comes straight from the command output.",
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
    """The final answer: a sentence per tool result (the latest first when there are many;
    a command's output as a coding agent reports it, any other tool's values in words), then,
    after commands, closing sentences up to about `tokens` tokens. With no result since the
    prompt: the earlier result a follow-up asks about, else a reply from the prompt alone."""
    u = g.understanding
    sentences: list[str] = []
    said: set[str] = set()
    commands = False
    for obs in g.observations[-6:]:
        if obs.command is not None:
            commands = True
            s = _about(obs, g)
        else:
            s = state(obs.tool, obs.arguments, obs.output, u)
        if s and s not in said:
            sentences.append(s)
            said.add(s)
    if g.searches and not g.observations:
        sentences.append(f"Here is what I found about {_subject(g.prompt)}.")
    if not sentences and (earlier := _earlier(g)) is not None:
        first = (
            _about(earlier, g)
            if earlier.command is not None
            else state(earlier.tool, earlier.arguments, earlier.output, u)
        )
        if first:
            head, _, rest = first.partition(" ")
            if head in ("It", "The", "That", "There"):
                return "As I found earlier, " + head.lower() + " " + rest
            return "As I found earlier: " + first
    if not sentences:
        return reply(u, rng, tokens)
    body = " ".join(sentences)
    if not commands:
        return body
    pool = list(_CLOSERS)
    rng.shuffle(pool)
    while pool and tok.count(body) < tokens * 0.8:
        body += " " + pool.pop()
    # What the tools returned may run past the length; made-up sentences never do.
    return _cut(body, tokens * 3)


def _subject(prompt: str) -> str:
    """What a question asks about, in its own words ("What's the latest trio release?": the
    latest trio release)."""
    first = re.split(r"(?<=[.!?])\s", prompt.strip(), maxsplit=1)[0].rstrip("?.! ")
    lead = r"^(?:what'?s|what is|what are|who is|tell me|show me|find|search for|look up)\s+"
    subject = re.sub(lead, "", first, flags=re.I)
    subject = re.sub(r"^(?:new|happening)\s+(?:in|with)\s+", "", subject, flags=re.I)
    return subject[:80] if subject else "this"


def _earlier(g: Grounding) -> Observation | None:
    """The earlier turn's result that answers the prompt: the latest of a tool about what the
    prompt is about, or, for a follow-up ("what was it again?"), the latest one."""
    about = g.understanding.concepts
    for obs in reversed(g.history):
        if about & concepts_of_name(obs.tool):
            return obs
    if g.understanding.intent == "follow_up" and g.history:
        return g.history[-1]
    return None


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
