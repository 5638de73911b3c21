# Owns: what makes generated arguments look like an agent's: vocabulary (paths, commands,
# queries, ...), the kind of string a property name or description suggests, realistic strings
# of each kind and of each `format`, fitting a string to a length range, and typical numbers for
# a numeric property's name. Pure: every random choice comes from the caller's `random.Random`.
from __future__ import annotations

import datetime
import re
import uuid
from random import Random
from typing import Any, Final

# fmt: off
WORDS: Final = (
    "alpha", "build", "cache", "config", "data", "debug", "deploy", "error", "event", "fix",
    "handler", "index", "input", "item", "log", "main", "model", "module", "network", "output",
    "parse", "queue", "request", "result", "server", "service", "session", "status", "task",
    "test", "token", "update", "user", "value", "worker", "report", "schema", "client", "router",
    "metric",
)
_PATHS: Final = (
    "src/app/main.py", "src/app/config.py", "src/utils/parser.py", "tests/test_api.py",
    "tests/test_parser.py", "README.md", "pyproject.toml", "docs/index.md",
    "src/server/routes.ts", "src/components/Button.tsx", "lib/core/engine.rs",
    "cmd/server/main.go", "scripts/build.sh", "package.json", "src/app/models/user.py",
    "config/settings.yaml",
)
_DIRS: Final = (
    "src", "src/app", "tests", "docs", "lib/core", "scripts", "src/components", "cmd/server",
)
COMMANDS: Final = (
    "ls -la src", "git status", "git diff --stat", "pytest -q tests", "cat README.md",
    'grep -rn "TODO" src', "python -m pip list", "npm test", "cargo build", "make lint",
    "rg --files src", "sed -n '1,80p' src/app/main.py", "find . -name '*.py' -maxdepth 2",
    "go test ./...",
)
ARGV_EXTRA: Final = ("src", "tests", "-v", "--color=never", "docs", "-q")
_QUERIES: Final = (
    "python asyncio timeout example", "fix import error pytest", "json schema oneof example",
    "rust borrow checker lifetime", "docker compose healthcheck", "git rebase squash commits",
    "latest release notes", "http retry backoff",
)
_URL_SEGMENTS: Final = ("docs", "api", "guide", "reference", "blog", "v1", "status", "releases")
_NAMES: Final = ("alex", "sam", "jordan", "taylor", "casey", "riley")
_SNIPPETS: Final = (
    "def main():\n    print(\"hello\")\n",
    "import os\n",
    "return result\n",
    "const value = await fetchData(url);\n",
    "fn main() {\n    println!(\"ok\");\n}\n",
)
_PATCH_EDITS: Final = (
    ("    return None", "    return result"),
    ("import os", "import os\nimport sys"),
    ("DEBUG = True", "DEBUG = False"),
    ("    timeout = 10", "    timeout = 30"),
)
# fmt: on
_GLOBS: Final = ("*.py", "src/**/*.ts", "**/*.md", "tests/*.py")
_REGEXES: Final = ("TODO", "def main", "import os", "class \\w+", "error")
_LANGUAGES: Final = ("python", "typescript", "rust", "go")
_BRANCHES: Final = ("main", "develop", "feature/parser-fix", "fix/timeout")
_PLACES: Final = ("Paris", "Berlin", "Tokyo", "San Francisco", "Toronto", "Lisbon")

# Name tokens -> kind of string; the first kind with a matching token wins.
_KIND_TOKENS: Final[tuple[tuple[str, frozenset[str]], ...]] = (
    ("url", frozenset({"url", "uri", "link", "href", "endpoint", "website", "homepage"})),
    ("email", frozenset({"email", "mail"})),
    ("patch", frozenset({"patch", "diff"})),
    ("command", frozenset({"command", "cmd", "shell", "script", "commandline", "argv"})),
    ("dir", frozenset({"dir", "directory", "cwd", "workdir", "folder", "root"})),
    ("path", frozenset({"path", "file", "filename", "filepath", "files", "paths"})),
    ("query", frozenset({"query", "q", "search", "keywords", "term", "terms", "question"})),
    ("code", frozenset({"code", "content", "contents", "source", "snippet", "replacement"})),
    (
        "text",
        frozenset(
            {"text", "message", "body", "description", "summary", "comment", "reason", "note"}
            | {"title", "explanation", "answer", "prompt"}
        ),
    ),
    ("glob", frozenset({"glob", "include", "exclude"})),
    ("regex", frozenset({"pattern", "regex", "regexp"})),
    ("language", frozenset({"language", "lang"})),
    ("branch", frozenset({"branch", "ref"})),
    ("date", frozenset({"date", "day"})),
    ("datetime", frozenset({"timestamp", "datetime", "since", "until"})),
    ("id", frozenset({"id", "uuid", "key"})),
    ("place", frozenset({"city", "location", "place", "region"})),
    ("name", frozenset({"name", "username", "user", "owner", "repo", "tag", "label"})),
)

FORMATS: Final = frozenset(
    {"date-time", "date", "time", "email", "idn-email", "uri", "url", "iri", "uri-reference"}
    | {"iri-reference", "uuid", "ipv4", "ipv6", "hostname", "idn-hostname", "duration"}
    | {"json-pointer", "regex"}
)


def _tokens(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return [t for t in re.split(r"[^a-z0-9]+", spaced.lower()) if t]


def hint_kind(name: str, description: Any = None) -> str | None:
    tokens = _tokens(name)
    for kind, words in _KIND_TOKENS:
        if any(t in words for t in tokens):
            return kind
    if isinstance(description, str) and re.search(
        r"(?<![a-z])(patch|diff)(?![a-z])", description, re.I
    ):
        return "patch"
    return None


_FRACTIONAL: Final = frozenset(
    {"temperature", "probability", "ratio", "score", "confidence", "threshold", "p", "weight"}
    | {"amount", "price", "lat", "latitude", "lon", "lng", "longitude", "fraction", "rate"}
    | {"celsius", "fahrenheit", "percent", "percentage", "factor", "scale"}
)


def integer_like(name: str) -> bool:
    """Whether a numeric property's name says it holds whole numbers (`*_ms`, counts, limits,
    ids, lines, ports, sizes, tokens), whatever its schema's `type`."""
    t = set(_tokens(name))
    if t & _FRACTIONAL:
        return False
    nice, _, _ = number_hint(name)
    return bool(nice) or bool(t & {"id", "index", "idx", "depth", "level", "width", "height"})


def number_hint(name: str) -> tuple[tuple[int | float, ...], int, int]:
    """Typical values for a numeric property (by name) and the natural range around them."""
    t = set(_tokens(name))
    if t & {"ms", "millis", "milliseconds"}:
        return (5000, 10000, 30000), 250, 30000
    if t & {"timeout", "deadline", "wait", "delay", "interval", "seconds", "secs"}:
        return (10, 30, 60, 120), 1, 600
    if "tokens" in t:
        return (2000, 4000, 10000), 256, 20000
    if t & {"days", "weeks", "months", "hours", "minutes", "nights", "times", "steps"}:
        return (1, 3, 7), 1, 30
    if "port" in t:
        return (3000, 8000, 8080), 1024, 65535
    if t & {"line", "lineno", "row"}:
        if t & {"end", "last", "stop", "to"}:
            return (40, 80, 200), 1, 500
        return (1, 10, 42, 120), 1, 500
    if t & {"offset", "skip", "start", "begin"}:
        return (0, 10, 50, 100), 0, 1000
    if t & {"limit", "count", "max", "num", "size", "top", "k", "n", "results", "lines"}:
        return (5, 10, 20, 50), 1, 100
    if "page" in t:
        return (1, 2, 3), 1, 20
    if t & {"retries", "retry", "attempts"}:
        return (1, 2, 3, 5), 0, 10
    if t & {"temperature", "probability", "ratio", "score", "confidence", "threshold", "p"}:
        return (0, 0.2, 0.5, 0.7, 1), 0, 1
    if "year" in t:
        return (2023, 2024, 2025), 1990, 2030
    return (), 0, 100


def _words(rng: Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


#: The kinds of string whose value is one of a few realistic samples, by kind.
_SAMPLES: Final[dict[str | None, tuple[str, ...]]] = {
    "command": COMMANDS,
    "dir": _DIRS,
    "path": _PATHS,
    "code": _SNIPPETS,
    "glob": _GLOBS,
    "regex": _REGEXES,
    "language": _LANGUAGES,
    "branch": _BRANCHES,
    "place": _PLACES,
}


def realistic(kind: str | None, rng: Random) -> str:
    """A string that looks like what an agent would pass for a property of this kind."""
    if kind == "url":
        return "https://example.com/" + "/".join(rng.sample(_URL_SEGMENTS, rng.randint(1, 3)))
    if kind == "email":
        return f"{rng.choice(_NAMES)}@example.com"
    if kind == "patch":
        path = rng.choice(_PATHS)
        old, new = rng.choice(_PATCH_EDITS)
        minus = "\n".join("-" + line for line in old.split("\n"))
        plus = "\n".join("+" + line for line in new.split("\n"))
        return f"*** Begin Patch\n*** Update File: {path}\n@@\n{minus}\n{plus}\n*** End Patch"
    if kind in _SAMPLES:
        return rng.choice(_SAMPLES[kind])
    if kind == "query":
        return rng.choice(_QUERIES) if rng.random() < 0.6 else _words(rng, 2, 4)
    if kind == "text":
        return _words(rng, 4, 8).capitalize() + "."
    if kind == "date":
        return format_sample("date", rng)
    if kind == "datetime":
        return format_sample("date-time", rng)
    if kind == "id":
        return f"{rng.choice(WORDS)}_{rng.getrandbits(24):06x}"
    if kind == "name":
        return "_".join(rng.choice(WORDS) for _ in range(rng.randint(1, 2)))
    return _words(rng, 1, 3)


def fit(s: str, lo: int, hi: int | None, kind: str | None, rng: Random) -> str:
    """`s` cut (at a word boundary when possible) or padded (with words, or directories for
    paths) to lo <= len <= hi."""
    if hi is not None and len(s) > hi:
        cut = s[:hi]
        boundary = max(cut.rfind(sep) for sep in " _/-\n")
        s = cut[:boundary] if boundary >= max(lo, 1) else cut
    if len(s) < lo:
        words: list[str] = [s] if s else []
        size = len(s)
        while size < lo:
            word = rng.choice(WORDS)
            words.append(word)
            size += len(word) + (1 if size else 0)
        if kind in ("path", "dir"):  # pad a path with leading directories
            s = "/".join([*reversed(words[1:]), words[0]] if s else words)
        else:
            s = ("/" if kind == "url" else " ").join(words)
    return s if hi is None else s[:hi]


def format_sample(fmt: str, rng: Random) -> str:
    if fmt in ("date-time", "date", "time"):
        day = datetime.date(2024, 1, 1) + datetime.timedelta(days=rng.randint(0, 730))
        clock = f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
        if fmt == "date":
            return day.isoformat()
        return f"{day.isoformat()}T{clock}Z" if fmt == "date-time" else f"{clock}Z"
    if fmt in ("email", "idn-email"):
        return f"{rng.choice(_NAMES)}@example.com"
    if fmt in ("uri", "url", "iri", "uri-reference", "iri-reference"):
        return realistic("url", rng)
    if fmt == "uuid":
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))
    if fmt == "ipv4":
        return f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
    if fmt == "ipv6":
        return f"fd00::{rng.randint(1, 0xFFFF):x}"
    if fmt in ("hostname", "idn-hostname"):
        return f"{rng.choice(WORDS)}.example.com"
    if fmt == "duration":
        return f"PT{rng.randint(1, 59)}M"
    if fmt == "json-pointer":
        return "/" + "/".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))
    return "^[a-z]+$"  # regex
