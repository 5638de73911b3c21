# The shell commands the default model runs through a shell or exec tool: read-only and
# realistic (ls, find, rg, sed -n, cat, wc, git status / diff / log, pytest -q), planned from
# what the prompt asks (list, read, search, test, git, build, a line count, the branch) and
# varied by step (a targeted question stops once its command ran), with the
# paths and words of the prompt and the files earlier outputs listed. Never a command that
# writes, installs or reaches the network. Pure: no I/O, no clocks.
from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from random import Random
from typing import Final

from rollout.model.grounding import Grounding

__all__ = ["next_command"]

_TEXT_FILES: Final = re.compile(
    r"(^|/)(readme|changelog|license|makefile|dockerfile)[^/]*$"
    r"|\.(md|rst|txt|py|toml|cfg|ini|json|ya?ml|js|ts|rs|go|sh|c|h)$",
    re.IGNORECASE,
)
_SKIP_DIRS: Final = "-not -path './.git/*' -not -path '*/node_modules/*'"


def _q(path: str) -> str:
    return shlex.quote(path)


def _readable(g: Grounding) -> list[str]:
    """Files to read: those the prompt names, then text files the outputs listed (READMEs
    first)."""
    seen = [f for f in g.files_seen if _TEXT_FILES.search(f)]
    seen.sort(key=lambda f: (not re.search(r"(^|/)readme", f, re.IGNORECASE), f.count("/")))
    return list(dict.fromkeys([*g.paths, *seen]))


def _term(g: Grounding) -> str:
    """What to search for: a quoted or code-like name of the prompt, else its telling word."""
    if g.names:
        return g.names[0]
    skip = {"where", "search", "find", "grep", "defined", "usages", "uses", "code", "file", "files"}
    words = [w for w in g.words if w not in skip]
    return words[0] if words else "TODO"


def _plan(g: Grounding) -> list[str]:
    """The commands of a coding prompt, in the order a model would run them."""
    where = g.dirs[0] if g.dirs else "."
    target = _q(where)
    intent = g.intent
    if intent == "count":
        return [f"wc -l {' '.join(_q(p) for p in g.paths)}" if g.paths else "wc -l $(git ls-files)"]
    if intent == "branch":
        return ["git branch --show-current"]
    if intent == "test":
        tests = [p for p in g.paths if "test" in p]
        return [f"pytest -q {_q(tests[0])}" if tests else "pytest -q"]
    if intent == "git":
        return ["git status --short", "git diff --stat", "git log --oneline -n 5"]
    if intent == "search":
        term = _q(_term(g))
        return [f"rg -n {term} {target}", f"rg -l {term} {target}", "ls -la"]
    if intent == "read" and g.paths:
        path = _q(g.paths[0])
        return [f"sed -n '1,120p' {path}", f"wc -l {path}", f"rg -n 'def |class ' {path}"]
    if intent == "build":
        return ["ls -la", "cat Makefile 2>/dev/null | head -n 40", "git status --short"]
    if intent == "list":
        return [
            f"ls -la {target}" if where != "." else "ls -la",
            f"find {target} -maxdepth 2 -type f {_SKIP_DIRS} | sort | head -n 50",
        ]
    return ["ls -la", f"rg --files {target} | head -n 50", "git status --short"]


#: Intents whose plan answers the prompt: once its commands ran, the model answers.
_TARGETED: Final = frozenset({"count", "branch", "test"})


def next_command(g: Grounding, step: int, rng: Random, planned: Sequence[str] = ()) -> str | None:
    """The command of the model's `step`-th shell call since the prompt: the plan's next one
    not yet run (nor `planned` for this step), then reads of the files the outputs listed;
    None when the plan answers the prompt (a test run, a line count) and has run."""
    ran = {*g.commands, *planned}
    for command in _plan(g):
        if command not in ran:
            return command
    if g.intent in _TARGETED and not g.asks("write"):  # "fix the failing test" goes on
        return None
    files = [f for f in _readable(g) if f"sed -n '1,40p' {_q(f)}" not in ran]
    if files:
        pick = files[0] if step < 3 else files[rng.randrange(len(files))]
        return f"sed -n '1,40p' {_q(pick)}"
    for command in ("wc -l $(git ls-files 2>/dev/null | head -n 20) 2>/dev/null | tail -n 1",
                    "du -sh . 2>/dev/null", "ls -la"):  # fmt: skip
        if command not in ran:
            return command
    return f"ls -la | head -n {10 + step}"
