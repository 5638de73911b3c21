# Owns: making up a function call's `arguments` (a JSON value) that validates against the tool's
# `parameters` JSON Schema, plus the small validator it checks its own output with.
# Pure and deterministic: no I/O, no clocks, no global state; every random choice comes from the
# caller's `random.Random`. Must not import third-party code, follow non-local `$ref`s, or return
# a value it has not checked; when it cannot satisfy a schema it raises UnsupportedSchema.
from __future__ import annotations

import copy
import datetime
import ipaddress
import json
import math
import re
import shlex
import urllib.parse
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from random import Random
from typing import Any, Final

__all__ = ["UnsupportedSchema", "generate_arguments"]


class UnsupportedSchema(ValueError):
    """No value can be generated for a schema (unsatisfiable, or beyond what this module reads).

    `path` locates the offending value in JSONPath-like form (`$`, `$.cfg.timeout`, `$.files[0]`);
    the message starts with it.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def generate_arguments(schema: Mapping[str, Any] | None, rng: Random) -> Any:
    """A JSON value (dicts, lists, str, int, float, bool, None) valid for `schema`.

    `None`, `{}` and an object schema without properties give `{}`. Deterministic for a given
    `rng` state; raises UnsupportedSchema (naming the JSON path) when it cannot satisfy `schema`.
    """
    if schema is None or schema is True:
        return {}
    if not isinstance(schema, Mapping):
        raise UnsupportedSchema("$", f"a schema must be a JSON object, got {type(schema).__name__}")
    return _Generator(schema, rng).generate()


# ---------------------------------------------------------------------------------------------
# Tuning. Recursion through `$ref`: a reference entered more than _SOFT_RECURSION times on one
# path switches its subtree to minimal values (no optional properties, minItems-long arrays,
# null/ref-free branches first); more than _HARD_RECURSION times means the schema has no finite
# instance.

_SOFT_RECURSION: Final = 2
_HARD_RECURSION: Final = 24
_MAX_REFS_ON_PATH: Final = 200
_P_OPTIONAL: Final = 0.5  # chance that an optional property is included
_P_NULL_FIRST: Final = 0.2  # chance that a nullable value is null
_NODE_ATTEMPTS: Final = 4  # regenerations of a node whose value fails the final check
_UNIQUE_ATTEMPTS: Final = 16
_PATTERN_ATTEMPTS: Final = 36
_STRETCHES: Final = (1, 3, 6, 12, 24, 48)
_MAX_SAMPLE: Final = 20_000  # characters in one regex sample
_MAX_VALIDATION_DEPTH: Final = 400
_MAX_NODES: Final = 20_000  # values generated per call, so pathological schemas fail fast

_TYPES: Final = ("null", "boolean", "integer", "number", "string", "array", "object")
_MINIMAL_TYPE_ORDER: Final = ("null", "boolean", "integer", "number", "string", "array", "object")

# ---------------------------------------------------------------------------------------------
# Realistic material for strings, chosen by the property name the value is for.

# fmt: off
_WORDS: Final = (
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
_COMMANDS: Final = (
    "ls -la src", "git status", "git diff --stat", "pytest -q tests", "cat README.md",
    'grep -rn "TODO" src', "python -m pip list", "npm test", "cargo build", "make lint",
    "rg --files src", "sed -n '1,80p' src/app/main.py", "find . -name '*.py' -maxdepth 2",
    "go test ./...",
)
_ARGV_EXTRA: Final = ("src", "tests", "-v", "--color=never", "docs", "-q")
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

_FORMATS: Final = frozenset(
    {"date-time", "date", "time", "email", "idn-email", "uri", "url", "iri", "uri-reference"}
    | {"iri-reference", "uuid", "ipv4", "ipv6", "hostname", "idn-hostname", "duration"}
    | {"json-pointer", "regex"}
)


# ---------------------------------------------------------------------------------------------
# Generation.


@dataclass(frozen=True)
class _Ctx:
    """Where a value goes: its path, the name it is for, and the `$ref`s entered to get there."""

    path: str
    hint: str
    refs: tuple[str, ...] = ()
    minimal: bool = False

    def child(self, name: str) -> _Ctx:
        return _Ctx(_child_path(self.path, name), name, self.refs, self.minimal)

    def item(self, index: int) -> _Ctx:
        return _Ctx(f"{self.path}[{index}]", _singular(self.hint), self.refs, self.minimal)

    def entered(self, ref: str) -> _Ctx:
        refs = (*self.refs, ref)
        count = refs.count(ref)
        if count > _HARD_RECURSION or len(refs) > _MAX_REFS_ON_PATH:
            raise UnsupportedSchema(
                self.path, f"$ref {ref!r} recurses without end (no finite value satisfies it)"
            )
        return _Ctx(self.path, self.hint, refs, self.minimal or count > _SOFT_RECURSION)


_Group = tuple[str, list[Any]]  # ("anyOf" | "oneOf", branches)
# Keywords the generator does not build values from, only checks values against.
_CHECK_ONLY: Final = ("not", "maxContains", "propertyNames")


class _NoValidBranch(UnsupportedSchema):
    """Every branch produced a value and none was valid for the whole node (worth a retry)."""


class _Generator:
    def __init__(self, root: Mapping[str, Any], rng: Random) -> None:
        self._root = root
        self._rng = rng
        # Valid both where `format` is asserted and where it is only an annotation (the 2020-12
        # default), so `oneOf`/`not` give the same answer to every validator.
        self._checkers = (
            _Validator(self._resolve, formats=True),
            _Validator(self._resolve, formats=False),
        )
        self._nodes = 0
        self._patterns: dict[str, _Pattern | None] = {}  # parsed per call: no shared state

    def generate(self) -> Any:
        return self._node(self._root, _Ctx("$", ""))

    # -- schema plumbing ------------------------------------------------------------------

    def _valid(self, value: Any, schema: Any) -> bool:
        return all(checker.is_valid(value, schema) for checker in self._checkers)

    def _resolve(self, ref: Any, path: str) -> Any:
        return _resolve_pointer(self._root, ref, path)

    def _collect(
        self, schema: Any, ctx: _Ctx
    ) -> tuple[list[Mapping[str, Any]], list[_Group], _Ctx]:
        """Flatten `$ref` and `allOf` into a list of keyword dicts; `anyOf`/`oneOf` stay groups."""
        parts: list[Mapping[str, Any]] = []
        groups: list[_Group] = []
        state = [ctx]

        def visit(s: Any) -> None:
            if s is True:
                return
            if s is False:
                raise UnsupportedSchema(ctx.path, "the schema is `false`; no value satisfies it")
            if not isinstance(s, Mapping):
                raise UnsupportedSchema(
                    ctx.path, f"a schema must be a JSON object, got {type(s).__name__}"
                )
            if "$ref" in s:
                ref = s["$ref"]
                state[0] = state[0].entered(str(ref))
                visit(self._resolve(ref, ctx.path))
            if "allOf" in s:
                for sub in _schema_list(s["allOf"], "allOf", ctx.path):
                    visit(sub)
            for keyword in ("anyOf", "oneOf"):
                if keyword in s:
                    groups.append((keyword, _schema_list(s[keyword], keyword, ctx.path)))
            # Conditionals become choices too: satisfy `if` and `then`, or satisfy `else` (a
            # value that then matches `if` after all is refused by the check of the whole).
            if "if" in s:
                branches = [{"allOf": [s["if"], s.get("then", True)]}, s.get("else", True)]
                groups.append(("if/then/else", branches))
            for name, sub in _dependent_schemas(s).items():
                groups.append(("dependentSchemas", [{"required": [name], "allOf": [sub]}, True]))
            parts.append(s)

        visit(schema)
        return parts, groups, state[0]

    def _node(self, schema: Any, ctx: _Ctx) -> Any:
        self._nodes += 1
        if self._nodes > _MAX_NODES:
            raise UnsupportedSchema(ctx.path, "the schema needs too many attempts to satisfy")
        parts, groups, ctx = self._collect(schema, ctx)
        # Values are built to satisfy what the generator reads (and anyOf/oneOf branches are
        # checked where chosen); a node is re-checked where it has keywords that are only
        # verified, and the root always, so no unchecked value is returned.
        check = ctx.path == "$" or any(k in part for part in parts for k in _CHECK_ONLY)
        missed: _NoValidBranch | None = None
        for _ in range(_NODE_ATTEMPTS * (2 if groups else 1)):
            try:
                value = self._from_parts(parts, groups, ctx, schema)
            except _NoValidBranch as exc:  # values came out, none valid: another draw may do
                missed = exc
                continue
            if not check or self._valid(value, schema):
                return value
        if missed is not None:
            raise missed
        raise UnsupportedSchema(
            ctx.path,
            "could not generate a value that satisfies the schema (`not`, `maxContains` and "
            "`propertyNames` are only checked, not built towards)",
        )

    def _from_parts(
        self, parts: list[Mapping[str, Any]], groups: list[_Group], ctx: _Ctx, whole: Any
    ) -> Any:
        if not groups:
            return self._from_merged(_merge(parts, ctx.path), ctx)
        keyword, branches = groups[0]
        first_error: UnsupportedSchema | None = None
        for branch in self._order_branches(branches, ctx):
            try:
                b_parts, b_groups, b_ctx = self._collect(branch, ctx)
                value = self._from_parts(parts + b_parts, groups[1:] + b_groups, b_ctx, whole)
            except UnsupportedSchema as exc:
                first_error = first_error or exc
                continue
            # The whole node's schema decides, so a oneOf value matching two branches is refused.
            if self._valid(value, whole):
                return value
        if first_error is None:
            raise _NoValidBranch(ctx.path, f"no {keyword} branch gave a valid value")
        raise UnsupportedSchema(
            ctx.path, f"no {keyword} branch could be satisfied (first failure: {first_error})"
        )

    def _order_branches(self, branches: list[Any], ctx: _Ctx) -> list[Any]:
        if ctx.minimal:
            return sorted(branches, key=lambda b: (not _is_null_schema(b), _mentions_ref(b)))
        ordered = list(branches)
        self._rng.shuffle(ordered)
        nulls = [b for b in ordered if _is_null_schema(b)]
        others = [b for b in ordered if not _is_null_schema(b)]
        if nulls and self._rng.random() < _P_NULL_FIRST:
            return nulls + others
        return others + nulls

    def _order_types(self, types: list[str], ctx: _Ctx) -> list[str]:
        if ctx.minimal:
            return sorted(types, key=_MINIMAL_TYPE_ORDER.index)
        others = [t for t in types if t != "null"]
        self._rng.shuffle(others)
        if "null" not in types:
            return others
        if self._rng.random() < _P_NULL_FIRST:
            return ["null", *others]
        return [*others, "null"]

    # -- one merged schema ----------------------------------------------------------------

    def _from_merged(self, m: dict[str, Any], ctx: _Ctx) -> Any:
        if "const" in m:
            value = copy.deepcopy(m["const"])
            rest = {k: v for k, v in m.items() if k != "const"}
            if not self._valid(value, rest):
                raise UnsupportedSchema(ctx.path, f"const {value!r} contradicts the other keywords")
            return value
        if "enum" in m:
            rest = {k: v for k, v in m.items() if k != "enum"}
            options = [e for e in m["enum"] if self._valid(e, rest)]
            if not options:
                raise UnsupportedSchema(
                    ctx.path, f"no enum value {m['enum']!r} satisfies the other keywords"
                )
            return copy.deepcopy(self._rng.choice(options))
        types: list[str] = m.get("type") or [_infer_type(m, ctx)]
        first_error: UnsupportedSchema | None = None
        for type_name in self._order_types(types, ctx):
            try:
                return self._typed(type_name, m, ctx)
            except UnsupportedSchema as exc:
                first_error = first_error or exc
        assert first_error is not None
        raise first_error

    def _typed(self, type_name: str, m: dict[str, Any], ctx: _Ctx) -> Any:
        if type_name == "object":
            return self._object(m, ctx)
        if type_name == "array":
            return self._array(m, ctx)
        if type_name == "string":
            return self._string(m, ctx)
        if type_name in ("integer", "number"):
            return self._number(m, ctx, integer=type_name == "integer")
        if type_name == "boolean":
            return self._rng.random() < 0.5
        return None

    # -- objects --------------------------------------------------------------------------

    def _object(self, m: dict[str, Any], ctx: _Ctx) -> dict[str, Any]:
        props: Mapping[str, Any] = m.get("properties", {})
        required: list[str] = m.get("required", [])
        min_props = _count(m, "minProperties", ctx.path)
        max_props = _count(m, "maxProperties", ctx.path, default=None)
        if max_props is not None and min_props > max_props:
            raise UnsupportedSchema(
                ctx.path, f"minProperties {min_props} is greater than maxProperties {max_props}"
            )
        depends: Mapping[str, list[str]] = m.get("dependentRequired", {})

        def closure(names: Sequence[str], into: list[str]) -> list[str]:
            out = list(into)
            todo = list(names)
            while todo:
                name = todo.pop(0)
                if name not in out:
                    out.append(name)
                    todo.extend(depends.get(name, []))
            return out

        must = closure(required, [])
        if max_props is not None and len(must) > max_props:
            raise UnsupportedSchema(
                ctx.path, f"{len(must)} required properties exceed maxProperties {max_props}"
            )
        chosen = list(must)
        optional = [n for n in props if n not in must]

        def fits(names: list[str]) -> bool:
            return max_props is None or len(names) <= max_props

        if not ctx.minimal:
            for name in optional:
                if self._rng.random() < _P_OPTIONAL:
                    candidate = closure([name], chosen)
                    if fits(candidate):
                        chosen = candidate
        spare = [n for n in optional if n not in chosen]
        self._rng.shuffle(spare)
        while len(chosen) < min_props and spare:
            candidate = closure([spare.pop(0)], chosen)
            if fits(candidate):
                chosen = candidate

        ordered = [n for n in props if n in chosen] + [n for n in chosen if n not in props]
        result: dict[str, Any] = {}
        for name in ordered:
            try:
                result[name] = self._node(props.get(name, True), ctx.child(name))
            except UnsupportedSchema:
                if name in must:
                    raise
                # An optional property we cannot fill is left out; the object stays valid.
        attempts = 0
        while len(result) < min_props:
            attempts += 1
            if attempts > 4 * min_props + 8:
                raise UnsupportedSchema(
                    ctx.path, f"cannot find {min_props} property names the schema allows"
                )
            extra = self._extra_property(m, props, result, ctx)
            if extra is not None:
                key, sub = extra
                result[key] = self._node(sub, ctx.child(key))
        return result

    def _extra_property(
        self, m: dict[str, Any], props: Mapping[str, Any], taken: Mapping[str, Any], ctx: _Ctx
    ) -> tuple[str, Any] | None:
        """An undeclared property name (and its schema) to reach minProperties, or None."""
        pattern_props: Mapping[str, Any] = m.get("patternProperties", {})
        extra_ok = m.get("additionalProperties", True) is not False
        sources = list(pattern_props)
        if not sources and not extra_ok:
            raise UnsupportedSchema(
                ctx.path, "minProperties needs more properties than the schema declares"
            )
        key: str | None = None
        if sources and (not extra_ok or self._rng.random() < 0.5):
            key = self._pattern_sample(self._rng.choice(sources))
        if key is None:
            if not extra_ok:
                return None
            key = f"{self._rng.choice(_WORDS)}_{len(taken) + 1}"
            if "propertyNames" in m:
                names = {"allOf": [{"type": "string"}, m["propertyNames"]]}
                try:
                    key = self._node(names, _Ctx(ctx.path, "name", ctx.refs, ctx.minimal))
                except UnsupportedSchema:
                    return None
        if key in taken or key in props:
            return None
        if "propertyNames" in m and not self._valid(key, m["propertyNames"]):
            return None
        subs = [s for p, s in pattern_props.items() if _regex_search(p, key, ctx.path)]
        if not subs:
            if not extra_ok:
                return None
            ap = m.get("additionalProperties", True)
            subs = [ap]
        return key, subs[0] if len(subs) == 1 else {"allOf": subs}

    def _parsed(self, source: str) -> _Pattern | None:
        if source not in self._patterns:
            try:
                self._patterns[source] = _Pattern(source)
            except _PatternUnsupported:
                self._patterns[source] = None
        return self._patterns[source]

    def _pattern_sample(self, source: str) -> str | None:
        pattern = self._parsed(source)
        if pattern is None:
            return None
        for stretch in _STRETCHES[:3]:
            sample = pattern.sample(self._rng, stretch)
            if sample and re.search(source, sample):
                return sample
        return None

    # -- arrays ---------------------------------------------------------------------------

    def _array(self, m: dict[str, Any], ctx: _Ctx) -> list[Any]:
        prefix: list[Any] = m.get("prefixItems", [])
        items = m.get("items", True)
        lo = _count(m, "minItems", ctx.path)
        hi = _count(m, "maxItems", ctx.path, default=None)
        if items is False:
            if lo > len(prefix):
                raise UnsupportedSchema(
                    ctx.path, f"minItems {lo} but `items: false` allows only {len(prefix)} items"
                )
            hi = len(prefix) if hi is None else min(hi, len(prefix))
        if hi is not None and lo > hi:
            raise UnsupportedSchema(ctx.path, f"minItems {lo} is greater than maxItems {hi}")
        unique = bool(m.get("uniqueItems", False))
        contains = m.get("contains")
        need_contains = 0
        if contains is not None:
            need_contains = _count(m, "minContains", ctx.path, default=1) or 0
        if ctx.minimal:
            n = max(lo, need_contains)
        else:
            n = max(lo, need_contains, len(prefix) if prefix else self._rng.randint(1, 3))
        if hi is not None:
            n = min(n, hi)
        if n < need_contains:
            raise UnsupportedSchema(
                ctx.path, f"minContains {need_contains} does not fit in maxItems {hi}"
            )

        kind = _hint_kind(ctx.hint, m.get("description"))
        if kind == "command" and not prefix and contains is None:
            argv = self._argv(lo, hi)
            if self._valid(argv, m):
                return argv

        values: list[Any] = []
        contains_from = n - need_contains
        for i in range(n):
            base = prefix[i] if i < len(prefix) else items
            sub = {"allOf": [base, contains]} if i >= contains_from else base
            for _ in range(_UNIQUE_ATTEMPTS if unique else 1):
                value = self._node(sub, ctx.item(i))
                if not unique or not any(_json_equal(value, v) for v in values):
                    break
            else:
                if len(values) >= lo and contains is None:
                    break  # a shorter array of distinct items is still valid
                raise UnsupportedSchema(
                    ctx.path, f"uniqueItems: could not find {n} distinct items for the array"
                )
            values.append(value)
        return values

    def _argv(self, lo: int, hi: int | None) -> list[str]:
        command = self._rng.choice(_COMMANDS)
        argv = ["bash", "-lc", command] if self._rng.random() < 0.4 else shlex.split(command)
        extras = [e for e in _ARGV_EXTRA if e not in argv]
        while len(argv) < lo and extras:
            argv.append(extras.pop(0))
        return argv if hi is None else argv[:hi]

    # -- strings --------------------------------------------------------------------------

    def _string(self, m: dict[str, Any], ctx: _Ctx) -> str:
        lo = _count(m, "minLength", ctx.path)
        hi = _count(m, "maxLength", ctx.path, default=None)
        if hi is not None and lo > hi:
            raise UnsupportedSchema(ctx.path, f"minLength {lo} is greater than maxLength {hi}")
        sources: list[str] = m.get("__patterns__", [])
        patterns = [_compile(p, ctx.path) for p in sources]
        fmt = m.get("format") if m.get("format") in _FORMATS else None
        kind = _hint_kind(ctx.hint, m.get("description"))

        def accept(s: str) -> bool:
            return (
                lo <= len(s)
                and (hi is None or len(s) <= hi)
                and all(p.search(s) for p in patterns)
                and (fmt is None or _format_ok(fmt, s))
            )

        for candidate in self._string_candidates(kind, fmt, sources, lo, hi):
            if accept(candidate):
                return candidate
        wanted = [f"length {lo}..{'' if hi is None else hi}"]
        wanted += [f"pattern {s!r}" for s in sources]
        wanted += [f"format {fmt!r}"] if fmt else []
        raise UnsupportedSchema(
            ctx.path, f"could not generate a string with {', '.join(wanted)} (tried candidates)"
        )

    def _string_candidates(
        self, kind: str | None, fmt: str | None, sources: list[str], lo: int, hi: int | None
    ) -> Iterator[str]:
        rng = self._rng
        if fmt is not None:
            for _ in range(4):
                sample = _format_sample(fmt, rng)
                yield sample
                if fmt in ("uri", "url", "iri", "uri-reference", "iri-reference"):
                    yield _fit(sample, lo, hi, "url", rng)  # URLs stretch with path segments
        else:
            yield _fit(_realistic(kind, rng), lo, hi, kind, rng)
        if not sources:
            return
        # Realistic strings reshaped to fit simple patterns (`^[a-z_]+$`, `^[a-z-]+$`, ...).
        for _ in range(3):
            base = _realistic(kind, rng)
            for variant in (base, base.replace(" ", "_"), base.replace(" ", "-"), base.lower()):
                yield variant
                yield _fit(variant, lo, hi, kind, rng)
        for word in rng.sample(_WORDS, 6):
            yield word
            yield word.upper()
        for source in sources:
            pattern = self._parsed(source)
            if pattern is None:
                continue
            anchored_start = source.startswith(("^", "\\A"))
            anchored_end = source.endswith("$") and not source.endswith("\\$")
            for attempt in range(_PATTERN_ATTEMPTS):
                sample = pattern.sample(rng, _STRETCHES[attempt % len(_STRETCHES)])
                yield sample
                if len(sample) < lo:
                    pad = _fit("", lo - len(sample), None, None, rng)
                    if not anchored_end:
                        yield sample + pad
                    if not anchored_start:
                        yield pad + sample
            if lo > 1:  # long minimums: the fewest fixed rounds per quantifier that reach lo
                least, most = 0, lo
                while least < most:
                    middle = (least + most) // 2
                    if len(pattern.sample(rng, middle, exact=True)) >= lo:
                        most = middle
                    else:
                        least = middle + 1
                for stretch in (least, least + 1, least + 2):
                    yield pattern.sample(rng, stretch, exact=True)

    # -- numbers --------------------------------------------------------------------------

    def _number(self, m: dict[str, Any], ctx: _Ctx, *, integer: bool) -> int | float:
        what = "integer" if integer else "number"
        low, low_open = _tightest(m, "minimum", "exclusiveMinimum", ctx.path, lower=True)
        high, high_open = _tightest(m, "maximum", "exclusiveMaximum", ctx.path, lower=False)
        bounds = _describe_bounds(low, low_open, high, high_open)
        if low is not None and high is not None:
            if low > high or (low == high and (low_open or high_open)):
                raise UnsupportedSchema(ctx.path, f"no {what} satisfies {bounds}")
        multiples: list[int | float] = m.get("__multiples__", [])
        step: Fraction | None = None
        for mult in multiples:
            step = _frac_decimal(mult) if step is None else _lcm(step, _frac_decimal(mult))
        if integer:
            step = Fraction(1) if step is None else _lcm(step, Fraction(1))

        def in_bounds(v: Fraction) -> bool:
            if low is not None and (v < low or (low_open and v == low)):
                return False
            return not (high is not None and (v > high or (high_open and v == high)))

        nice, nat_lo, nat_hi = _number_hint(ctx.hint)
        w_lo, w_hi = Fraction(nat_lo), Fraction(nat_hi)
        if low is not None:
            w_lo = max(w_lo, low)
        if high is not None:
            w_hi = min(w_hi, high)
        if w_lo > w_hi:  # the natural range misses the bounds: stay near the bound(s)
            span = max(Fraction(nat_hi - nat_lo), Fraction(10))
            w_lo = low if low is not None else (high - span if high is not None else w_lo)
            w_hi = high if high is not None else w_lo + span

        def candidates() -> Iterator[Fraction]:
            rng = self._rng
            if nice and not ctx.minimal and rng.random() < 0.75:
                shuffled = list(nice)
                rng.shuffle(shuffled)
                yield from (Fraction(v) for v in shuffled)
            if step is not None:
                k_lo, k_hi = _step_range(low, low_open, high, high_open, step)
                if k_lo is not None and k_hi is not None and k_lo > k_hi:
                    return
                wk_lo, wk_hi = math.ceil(w_lo / step), math.floor(w_hi / step)
                wk_hi = max(wk_hi, wk_lo)
                if k_lo is not None:
                    wk_lo = max(wk_lo, k_lo)
                    wk_hi = max(wk_hi, wk_lo)
                if k_hi is not None:
                    wk_hi = min(wk_hi, k_hi)
                    wk_lo = min(wk_lo, wk_hi)
                for _ in range(12):
                    yield rng.randint(wk_lo, wk_hi) * step
                # Integral values pass float `multipleOf` checks that 0.1-style steps can fail.
                for k in range(wk_lo, min(wk_hi, wk_lo + 200) + 1):
                    if (k * step).denominator == 1:
                        yield k * step
                for edge_k in (k_lo, k_hi, wk_lo, wk_hi):
                    if edge_k is not None:
                        yield edge_k * step
                return
            for _ in range(12):
                yield Fraction(round(rng.uniform(float(w_lo), float(w_hi)), 2))
            if low is not None and high is not None:
                yield Fraction((float(low) + float(high)) / 2)
            for edge, toward in ((low, math.inf), (high, -math.inf)):
                if edge is not None:
                    yield edge
                    yield Fraction(math.nextafter(float(edge), toward))

        rounding = False
        for v in candidates():
            if not in_bounds(v) or (step is not None and v % step != 0):
                continue
            out = _json_number(v, integer)
            if _in_float_bounds(out, m) and all(_is_multiple(out, d) for d in multiples):
                return out
            rounding = True
        detail = f" that is a multiple of {_fmt_frac(step)}" if step is not None else ""
        if rounding:
            detail += " (in floating point, as validators check multipleOf)"
        raise UnsupportedSchema(
            ctx.path, f"no {what} satisfies {bounds or 'the bounds'}{detail}".rstrip()
        )


# ---------------------------------------------------------------------------------------------
# Merging `allOf` parts into one keyword dict. Internal keys: `__patterns__` (all `pattern`s)
# and `__multiples__` (all `multipleOf`s); draft-4 boolean exclusive bounds become numeric ones;
# draft-7 tuple `items` becomes `prefixItems`; `type` becomes a list.

_MAX_OF: Final = frozenset(
    {"minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties", "minContains"}
)
_MIN_OF: Final = frozenset(
    {"maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties", "maxContains"}
)
_OBJECT_KEYS: Final = frozenset(
    {"properties", "patternProperties", "additionalProperties", "required"}
)
_ARRAY_KEYS: Final = frozenset({"prefixItems", "items"})
_SKIP_KEYS: Final = frozenset({"$ref", "allOf", "anyOf", "oneOf", "$defs", "definitions"})


def _normalize(part: Mapping[str, Any], path: str) -> dict[str, Any]:
    out = {k: v for k, v in part.items() if k not in _SKIP_KEYS}
    for flag, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if isinstance(out.get(flag), bool):  # draft 4: a flag on minimum/maximum
            if out.pop(flag) and bound in out:
                out[flag] = out.pop(bound)
    if "multipleOf" in out:
        mult = out.pop("multipleOf")
        if not _is_number(mult) or mult <= 0:
            raise UnsupportedSchema(path, f"multipleOf must be a positive number, got {mult!r}")
        out["__multiples__"] = [mult]
    if "pattern" in out:
        pattern = out.pop("pattern")
        if not isinstance(pattern, str):
            raise UnsupportedSchema(path, f"pattern must be a string, got {pattern!r}")
        out["__patterns__"] = [pattern]
    if isinstance(out.get("items"), list):  # draft 7 tuple form
        out["prefixItems"] = out.pop("items")
        if "additionalItems" in out:
            out["items"] = out["additionalItems"]
    out.pop("additionalItems", None)
    if "dependencies" in out:
        for name, dep in out.pop("dependencies").items():
            if isinstance(dep, list):  # copied, never written into the caller's schema
                out["dependentRequired"] = {**out.get("dependentRequired", {}), name: dep}
    if "type" in out:
        types = out["type"] if isinstance(out["type"], list) else [out["type"]]
        for t in types:
            if t not in _TYPES:
                raise UnsupportedSchema(path, f"unknown type {t!r}")
        out["type"] = types
    if "enum" in out and not isinstance(out["enum"], list):
        raise UnsupportedSchema(path, f"enum must be an array, got {out['enum']!r}")
    for key in ("properties", "patternProperties", "dependentRequired"):
        if key in out and not isinstance(out[key], Mapping):
            raise UnsupportedSchema(path, f"{key} must be an object")
    if "required" in out and not isinstance(out["required"], list):
        raise UnsupportedSchema(path, "required must be an array of names")
    return out


def _merge(raw_parts: Sequence[Mapping[str, Any]], path: str) -> dict[str, Any]:
    parts = [_normalize(p, path) for p in raw_parts]
    out: dict[str, Any] = {}
    for part in parts:
        for key, value in part.items():
            if key in _OBJECT_KEYS or key in _ARRAY_KEYS:
                continue
            out[key] = _combine(key, out[key], value, path) if key in out else value
    if any(key in part for part in parts for key in _OBJECT_KEYS):
        _merge_object(parts, out, path)
    if any(key in part for part in parts for key in _ARRAY_KEYS):
        _merge_array(parts, out)
    return out


def _combine(key: str, a: Any, b: Any, path: str) -> Any:
    if key == "type":
        types = _intersect_types(a, b)
        if not types:
            raise UnsupportedSchema(path, f"allOf: types {a!r} and {b!r} do not intersect")
        return types
    if key == "enum":
        both = [x for x in a if any(_json_equal(x, y) for y in b)]
        if not both:
            raise UnsupportedSchema(path, "allOf: the enums have no value in common")
        return both
    if key == "const":
        if not _json_equal(a, b):
            raise UnsupportedSchema(path, f"allOf: const {a!r} conflicts with const {b!r}")
        return a
    if key in _MAX_OF:
        return max(a, b)
    if key in _MIN_OF:
        return min(a, b)
    if key in ("__patterns__", "__multiples__"):
        return [*a, *(x for x in b if x not in a)]
    if key == "uniqueItems":
        return bool(a) or bool(b)
    if key in ("contains", "propertyNames", "not"):
        return {"allOf": [a, b]}
    if key == "dependentRequired":
        merged = {k: list(v) for k, v in a.items()}
        for k, v in b.items():
            merged[k] = [*merged.get(k, []), *v]
        return merged
    return a  # annotations and keywords the generator does not read: first one wins


def _merge_object(parts: list[dict[str, Any]], out: dict[str, Any], path: str) -> None:
    required: list[str] = []
    names: list[str] = []
    for part in parts:
        for name in part.get("properties", {}):
            if name not in names:
                names.append(name)
        for name in part.get("required", []):
            if name not in required:
                required.append(name)
    names += [n for n in required if n not in names]
    props: dict[str, Any] = {}
    for name in names:
        subs: list[Any] = []
        allowed = True
        for part in parts:
            matched = False
            if name in part.get("properties", {}):
                subs.append(part["properties"][name])
                matched = True
            for pattern, sub in part.get("patternProperties", {}).items():
                if _regex_search(pattern, name, path):
                    subs.append(sub)
                    matched = True
            if not matched and "additionalProperties" in part:
                extra = part["additionalProperties"]
                if extra is False:
                    allowed = False
                elif extra is not True:
                    subs.append(extra)
        if not allowed:
            if name in required:
                raise UnsupportedSchema(
                    path, f"required property {name!r} is forbidden by additionalProperties: false"
                )
            continue
        props[name] = True if not subs else subs[0] if len(subs) == 1 else {"allOf": subs}
    if props:
        out["properties"] = props
    if required:
        out["required"] = required
    pattern_props: dict[str, Any] = {}
    for part in parts:
        for pattern, sub in part.get("patternProperties", {}).items():
            old = pattern_props.get(pattern)
            pattern_props[pattern] = sub if old is None else {"allOf": [old, sub]}
    if pattern_props:
        out["patternProperties"] = pattern_props
    extras = [p["additionalProperties"] for p in parts if "additionalProperties" in p]
    if any(e is False for e in extras):
        out["additionalProperties"] = False
    else:
        schemas = [e for e in extras if e is not True]
        if schemas:
            out["additionalProperties"] = schemas[0] if len(schemas) == 1 else {"allOf": schemas}


def _merge_array(parts: list[dict[str, Any]], out: dict[str, Any]) -> None:
    longest = max(len(p.get("prefixItems", [])) for p in parts)
    prefix: list[Any] = []
    cap: int | None = None
    for i in range(longest):
        subs: list[Any] = []
        for part in parts:
            own = part.get("prefixItems", [])
            if i < len(own):
                subs.append(own[i])
            elif part.get("items", True) is False:
                cap = len(own) if cap is None else min(cap, len(own))
            elif part.get("items", True) is not True:
                subs.append(part["items"])
        prefix.append(True if not subs else subs[0] if len(subs) == 1 else {"allOf": subs})
    if prefix:
        out["prefixItems"] = prefix
    items = [p["items"] for p in parts if "items" in p]
    if any(i is False for i in items):
        out["items"] = False
    else:
        schemas = [i for i in items if i is not True]
        if schemas:
            out["items"] = schemas[0] if len(schemas) == 1 else {"allOf": schemas}
    if cap is not None:
        out["maxItems"] = min(out.get("maxItems", cap), cap)


def _intersect_types(a: list[str], b: list[str]) -> list[str]:
    out: list[str] = []
    for t in a:
        if t in b:
            keep = t
        elif (t == "integer" and "number" in b) or (t == "number" and "integer" in b):
            keep = "integer"
        else:
            continue
        if keep not in out:
            out.append(keep)
    return out


def _infer_type(m: Mapping[str, Any], ctx: _Ctx) -> str:
    keys = set(m)
    families = (
        ("object", {"properties", "required", "additionalProperties", "patternProperties"}),
        ("object", {"minProperties", "maxProperties", "propertyNames", "dependentRequired"}),
        ("array", {"items", "prefixItems", "minItems", "maxItems", "uniqueItems", "contains"}),
        ("string", {"minLength", "maxLength", "__patterns__", "format"}),
        ("number", {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}),
        ("number", {"__multiples__"}),
    )
    for type_name, words in families:
        if keys & words:
            return type_name
    return "object" if ctx.path == "$" else "string"


# ---------------------------------------------------------------------------------------------
# Validation: a subset of draft 2020-12 (plus draft-4/7 spellings), enough to check what the
# generator produces. Unknown keywords are ignored, as JSON Schema does.


class _Validator:
    def __init__(self, resolve: Callable[[Any, str], Any], *, formats: bool) -> None:
        self._resolve = resolve
        self._formats = formats

    def is_valid(self, instance: Any, schema: Any) -> bool:
        try:
            return self._ok(instance, schema, 0)
        except (UnsupportedSchema, RecursionError, TypeError, ValueError, re.error):
            return False

    def _ok(self, x: Any, s: Any, depth: int) -> bool:
        if s is True:
            return True
        if s is False or not isinstance(s, Mapping) or depth > _MAX_VALIDATION_DEPTH:
            return False
        d = depth + 1
        if "$ref" in s and not self._ok(x, self._resolve(s["$ref"], "$"), d):
            return False
        if "type" in s:
            types = s["type"] if isinstance(s["type"], list) else [s["type"]]
            if not any(_has_type(x, t) for t in types):
                return False
        if "const" in s and not _json_equal(x, s["const"]):
            return False
        if "enum" in s and not any(_json_equal(x, e) for e in s["enum"]):
            return False
        if not all(self._ok(x, sub, d) for sub in s.get("allOf", ())):
            return False
        if "anyOf" in s and not any(self._ok(x, sub, d) for sub in s["anyOf"]):
            return False
        if "oneOf" in s and sum(1 for sub in s["oneOf"] if self._ok(x, sub, d)) != 1:
            return False
        if "not" in s and self._ok(x, s["not"], d):
            return False
        if "if" in s:
            branch = s.get("then", True) if self._ok(x, s["if"], d) else s.get("else", True)
            if not self._ok(x, branch, d):
                return False
        if _is_number(x):
            return self._number_ok(x, s)
        if isinstance(x, str):
            return self._string_ok(x, s)
        if isinstance(x, list):
            return self._array_ok(x, s, d)
        if isinstance(x, Mapping):
            return self._object_ok(x, s, d)
        return True

    def _number_ok(self, x: float, s: Mapping[str, Any]) -> bool:
        if not _in_float_bounds(x, s):
            return False
        multiples = [s["multipleOf"]] if "multipleOf" in s else []
        return all(_is_multiple(x, m) for m in [*multiples, *s.get("__multiples__", ())])

    def _string_ok(self, x: str, s: Mapping[str, Any]) -> bool:
        if len(x) < s.get("minLength", 0) or len(x) > s.get("maxLength", math.inf):
            return False
        patterns = [s["pattern"]] if "pattern" in s else []
        for pattern in [*patterns, *s.get("__patterns__", ())]:
            try:
                if not re.search(pattern, x):
                    return False
            except re.error:
                return False
        fmt = s.get("format")
        if not self._formats or not isinstance(fmt, str) or fmt not in _FORMATS:
            return True
        return _format_ok(fmt, x)

    def _array_ok(self, x: list[Any], s: Mapping[str, Any], d: int) -> bool:
        if len(x) < s.get("minItems", 0) or len(x) > s.get("maxItems", math.inf):
            return False
        items = s.get("items", True)
        if isinstance(items, list):  # draft 7 tuple form
            prefix, rest = items, s.get("additionalItems", True)
        else:
            prefix, rest = s.get("prefixItems", []), items
        for i, value in enumerate(x):
            sub = prefix[i] if i < len(prefix) else rest
            if not self._ok(value, sub, d):
                return False
        if s.get("uniqueItems"):
            for i in range(len(x)):
                if any(_json_equal(x[i], x[j]) for j in range(i)):
                    return False
        if "contains" in s:
            hits = sum(1 for value in x if self._ok(value, s["contains"], d))
            if hits < s.get("minContains", 1) or hits > s.get("maxContains", math.inf):
                return False
        return True

    def _object_ok(self, x: Mapping[str, Any], s: Mapping[str, Any], d: int) -> bool:
        if len(x) < s.get("minProperties", 0) or len(x) > s.get("maxProperties", math.inf):
            return False
        if any(name not in x for name in s.get("required", ())):
            return False
        props: Mapping[str, Any] = s.get("properties", {})
        pattern_props: Mapping[str, Any] = s.get("patternProperties", {})
        extra = s.get("additionalProperties", True)
        for key, value in x.items():
            matched = False
            if key in props:
                matched = True
                if not self._ok(value, props[key], d):
                    return False
            for pattern, sub in pattern_props.items():
                if re.search(pattern, key):
                    matched = True
                    if not self._ok(value, sub, d):
                        return False
            if not matched and not self._ok(value, extra, d):
                return False
            if "propertyNames" in s and not self._ok(key, s["propertyNames"], d):
                return False
        dependent = dict(s.get("dependentRequired", {}))
        dependent_schemas = dict(s.get("dependentSchemas", {}))
        for name, dep in s.get("dependencies", {}).items():
            (dependent if isinstance(dep, list) else dependent_schemas)[name] = dep
        for name, needed in dependent.items():
            if name in x and any(n not in x for n in needed):
                return False
        for name, sub in dependent_schemas.items():
            if name in x and not self._ok(x, sub, d):
                return False
        return True


def _in_float_bounds(x: float, s: Mapping[str, Any]) -> bool:
    """Bounds checked in the instance's own arithmetic, as validators do (both draft spellings)."""
    low: Any = s.get("minimum")
    high: Any = s.get("maximum")
    low_ex: Any = s.get("exclusiveMinimum")
    high_ex: Any = s.get("exclusiveMaximum")
    if low is not None and (x < low or (low_ex is True and x == low)):
        return False
    if high is not None and (x > high or (high_ex is True and x == high)):
        return False
    if _is_number(low_ex) and x <= low_ex:
        return False
    return not (_is_number(high_ex) and x >= high_ex)


def _is_multiple(x: float, m: float) -> bool:
    """`multipleOf` as Python validators compute it (float division when the divisor is float)."""
    try:
        if isinstance(m, float):
            quotient = x / m
            return bool(int(quotient) == quotient)
        return bool(x % m == 0)
    except (OverflowError, ZeroDivisionError, ValueError):
        return False


# ---------------------------------------------------------------------------------------------
# Small helpers.


def _resolve_pointer(root: Mapping[str, Any], ref: Any, path: str) -> Any:
    if not isinstance(ref, str) or not ref.startswith("#"):
        raise UnsupportedSchema(path, f"only local $ref ('#/...') is supported, got {ref!r}")
    pointer = urllib.parse.unquote(ref[1:])
    if pointer == "":
        return root
    if not pointer.startswith("/"):
        raise UnsupportedSchema(path, f"$ref {ref!r}: anchors are not supported")
    node: Any = root
    for raw in pointer[1:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            raise UnsupportedSchema(path, f"$ref {ref!r} does not resolve in this schema")
    return node


def _dependent_schemas(s: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(s.get("dependentSchemas") or {})
    for name, dep in (s.get("dependencies") or {}).items():
        if not isinstance(dep, list):  # draft 7: a list is dependentRequired
            out[name] = dep
    return out


def _schema_list(value: Any, keyword: str, path: str) -> list[Any]:
    if not isinstance(value, list) or not value:
        raise UnsupportedSchema(path, f"{keyword} must be a non-empty array of schemas")
    return list(value)


def _is_null_schema(schema: Any) -> bool:
    if not isinstance(schema, Mapping):
        return False
    if schema.get("type") in ("null", ["null"]):
        return True
    return ("const" in schema and schema["const"] is None) or schema.get("enum") == [None]


def _mentions_ref(schema: Any) -> bool:
    if isinstance(schema, Mapping):
        return "$ref" in schema or any(_mentions_ref(v) for v in schema.values())
    if isinstance(schema, list):
        return any(_mentions_ref(v) for v in schema)
    return False


def _child_path(path: str, name: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        return f"{path}.{name}"
    return f"{path}[{json.dumps(name)}]"


def _singular(name: str) -> str:
    if name.endswith("ies") and len(name) > 3:
        return name[:-3] + "y"
    if name.endswith(("sses", "xes", "ches", "shes")):
        return name[:-2]
    if name.endswith("s") and not name.endswith("ss"):
        return name[:-1]
    return name


def _count(m: Mapping[str, Any], key: str, path: str, default: int | None = 0) -> Any:
    """A non-negative integer keyword (minLength, maxItems, ...), or `default` when absent."""
    if key not in m:
        return default
    value = m[key]
    if isinstance(value, bool) or not _is_number(value) or value < 0 or value != int(value):
        raise UnsupportedSchema(path, f"{key} must be a non-negative integer, got {value!r}")
    return int(value)


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _has_type(x: Any, t: str) -> bool:
    if t == "null":
        return x is None
    if t == "boolean":
        return isinstance(x, bool)
    if t == "integer":
        return _is_number(x) and (isinstance(x, int) or float(x).is_integer())
    if t == "number":
        return _is_number(x)
    if t == "string":
        return isinstance(x, str)
    if t == "array":
        return isinstance(x, list)
    if t == "object":
        return isinstance(x, Mapping)
    return False


def _json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(p, q) for p, q in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if a is None or b is None:
        return a is b
    return type(a) is type(b) and bool(a == b)


def _compile(source: str, path: str) -> re.Pattern[str]:
    try:
        return re.compile(source)
    except re.error as exc:
        raise UnsupportedSchema(path, f"pattern {source!r} is not a valid regex: {exc}") from None


def _regex_search(source: str, text: str, path: str) -> bool:
    return _compile(source, path).search(text) is not None


def _tightest(
    m: Mapping[str, Any], inclusive: str, exclusive: str, path: str, *, lower: bool
) -> tuple[Fraction | None, bool]:
    """The tighter of an inclusive and an exclusive bound, exactly, with whether it is open."""
    best: Fraction | None = None
    is_open = False
    for key, open_ in ((inclusive, False), (exclusive, True)):
        if key not in m:
            continue
        raw = m[key]
        if not _is_number(raw) or not math.isfinite(raw):
            raise UnsupportedSchema(path, f"{key} must be a finite number, got {raw!r}")
        value = Fraction(raw)
        tighter = best is None or (value > best if lower else value < best)
        if tighter or (value == best and open_):
            best, is_open = value, open_
    return best, is_open


def _step_range(
    low: Fraction | None, low_open: bool, high: Fraction | None, high_open: bool, step: Fraction
) -> tuple[int | None, int | None]:
    """The range of k for which k * step lies within the bounds (None: unbounded)."""
    k_lo = k_hi = None
    if low is not None:
        k_lo = math.ceil(low / step)
        if low_open and k_lo * step == low:
            k_lo += 1
    if high is not None:
        k_hi = math.floor(high / step)
        if high_open and k_hi * step == high:
            k_hi -= 1
    return k_lo, k_hi


def _frac_decimal(x: float) -> Fraction:
    """`0.1` as 1/10 (its decimal spelling), not as the nearest binary fraction."""
    return Fraction(x) if isinstance(x, int) else Fraction(repr(x))


def _lcm(a: Fraction, b: Fraction) -> Fraction:
    return Fraction(math.lcm(a.numerator, b.numerator), math.gcd(a.denominator, b.denominator))


def _json_number(v: Fraction, integer: bool) -> int | float:
    if v.denominator == 1 and (integer or abs(v) < 2**53):
        return int(v)
    return float(v)


def _fmt_frac(v: Fraction | None) -> str:
    if v is None:
        return "?"
    return str(v.numerator) if v.denominator == 1 else repr(float(v))


def _describe_bounds(
    low: Fraction | None, low_open: bool, high: Fraction | None, high_open: bool
) -> str:
    parts = []
    if low is not None:
        parts.append(f"{'>' if low_open else '>='} {_fmt_frac(low)}")
    if high is not None:
        parts.append(f"{'<' if high_open else '<='} {_fmt_frac(high)}")
    return " and ".join(parts)


def _tokens(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    return [t for t in re.split(r"[^a-z0-9]+", spaced.lower()) if t]


def _hint_kind(name: str, description: Any = None) -> str | None:
    tokens = _tokens(name)
    for kind, words in _KIND_TOKENS:
        if any(t in words for t in tokens):
            return kind
    if isinstance(description, str) and re.search(
        r"(?<![a-z])(patch|diff)(?![a-z])", description, re.I
    ):
        return "patch"
    return None


def _number_hint(name: str) -> tuple[tuple[int | float, ...], int, int]:
    """Typical values for a numeric property (by name) and the natural range around them."""
    t = set(_tokens(name))
    if t & {"timeout", "deadline", "wait", "delay", "interval"}:
        if t & {"ms", "millis", "milliseconds"}:
            return (5000, 10000, 30000, 60000), 1000, 120000
        return (10, 30, 60, 120), 1, 600
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
    return " ".join(rng.choice(_WORDS) for _ in range(rng.randint(low, high)))


def _realistic(kind: str | None, rng: Random) -> str:
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
    if kind == "command":
        return rng.choice(_COMMANDS)
    if kind == "dir":
        return rng.choice(_DIRS)
    if kind == "path":
        return rng.choice(_PATHS)
    if kind == "query":
        return rng.choice(_QUERIES) if rng.random() < 0.6 else _words(rng, 2, 4)
    if kind == "code":
        return rng.choice(_SNIPPETS)
    if kind == "text":
        return _words(rng, 4, 8).capitalize() + "."
    if kind == "glob":
        return rng.choice(_GLOBS)
    if kind == "regex":
        return rng.choice(_REGEXES)
    if kind == "language":
        return rng.choice(_LANGUAGES)
    if kind == "branch":
        return rng.choice(_BRANCHES)
    if kind == "date":
        return _format_sample("date", rng)
    if kind == "datetime":
        return _format_sample("date-time", rng)
    if kind == "id":
        return f"{rng.choice(_WORDS)}_{rng.getrandbits(24):06x}"
    if kind == "place":
        return rng.choice(_PLACES)
    if kind == "name":
        return "_".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 2)))
    return _words(rng, 1, 3)


def _fit(s: str, lo: int, hi: int | None, kind: str | None, rng: Random) -> str:
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
            word = rng.choice(_WORDS)
            words.append(word)
            size += len(word) + (1 if size else 0)
        if kind in ("path", "dir"):  # pad a path with leading directories
            s = "/".join([*reversed(words[1:]), words[0]] if s else words)
        else:
            s = ("/" if kind == "url" else " ").join(words)
    return s if hi is None else s[:hi]


def _format_sample(fmt: str, rng: Random) -> str:
    if fmt in ("date-time", "date", "time"):
        day = datetime.date(2024, 1, 1) + datetime.timedelta(days=rng.randint(0, 730))
        clock = f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}"
        if fmt == "date":
            return day.isoformat()
        return f"{day.isoformat()}T{clock}Z" if fmt == "date-time" else f"{clock}Z"
    if fmt in ("email", "idn-email"):
        return f"{rng.choice(_NAMES)}@example.com"
    if fmt in ("uri", "url", "iri", "uri-reference", "iri-reference"):
        return _realistic("url", rng)
    if fmt == "uuid":
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))
    if fmt == "ipv4":
        return f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
    if fmt == "ipv6":
        return f"fd00::{rng.randint(1, 0xFFFF):x}"
    if fmt in ("hostname", "idn-hostname"):
        return f"{rng.choice(_WORDS)}.example.com"
    if fmt == "duration":
        return f"PT{rng.randint(1, 59)}M"
    if fmt == "json-pointer":
        return "/" + "/".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 3)))
    return "^[a-z]+$"  # regex


_DATE_RE: Final = re.compile(r"\d{4}-\d{2}-\d{2}")
_TIME_RE: Final = re.compile(r"\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})")
_LABEL: Final = r"[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOST_RE: Final = re.compile(rf"(?=.{{1,253}}$){_LABEL}(\.{_LABEL})*")
_DURATION_RE: Final = re.compile(
    r"P(?!$)(\d+Y)?(\d+M)?(\d+W)?(\d+D)?(T(?=\d)(\d+H)?(\d+M)?(\d+S)?)?"
)


def _format_ok(fmt: str, s: str) -> bool:
    """A conservative check of the formats this module generates."""
    try:
        if fmt == "date":
            return bool(_DATE_RE.fullmatch(s)) and bool(datetime.date.fromisoformat(s))
        if fmt == "time":
            return bool(_TIME_RE.fullmatch(s)) and _clock_ok(s)
        if fmt == "date-time":
            day, sep, clock = s[:10], s[10:11], s[11:]
            return sep in ("T", "t", " ") and _format_ok("date", day) and _format_ok("time", clock)
        if fmt in ("email", "idn-email"):
            return re.fullmatch(r"[^@\s]+@[^@\s]+\.[^@\s]+", s) is not None
        if fmt in ("uri", "url", "iri"):
            return re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*:[^\s]*", s) is not None
        if fmt in ("uri-reference", "iri-reference"):
            return re.search(r"\s", s) is None
        if fmt == "uuid":
            uuid.UUID(s)
            return len(s) == 36 and all(s[i] == "-" for i in (8, 13, 18, 23))
        if fmt == "ipv4":
            ipaddress.IPv4Address(s)
            return True
        if fmt == "ipv6":
            ipaddress.IPv6Address(s)
            return True
        if fmt in ("hostname", "idn-hostname"):
            return _HOST_RE.fullmatch(s) is not None
        if fmt == "duration":
            return _DURATION_RE.fullmatch(s) is not None
        if fmt == "json-pointer":
            return s == "" or s.startswith("/")
        if fmt == "regex":
            re.compile(s)
            return True
    except (ValueError, re.error):
        return False
    return True


def _clock_ok(s: str) -> bool:
    hour, minute, second = int(s[0:2]), int(s[3:5]), int(s[6:8])
    return hour < 24 and minute < 60 and second < 61


# ---------------------------------------------------------------------------------------------
# Example strings for a regex. A small parser for the subset tool schemas use: literals and
# escapes, `.`, classes (`[a-z0-9_-]`, `[^/]`, `\d \w \s` and negations), groups (capturing,
# `(?:...)`, named), alternation, the quantifiers `* + ? {n} {n,} {n,m} {,m}` (lazy or not) and
# the anchors `^ $ \A \Z \b`. Lookarounds are skipped and backreferences refused; the caller
# checks every sample with `re.search`.


class _PatternUnsupported(Exception):
    pass


_PRINTABLE: Final = tuple(chr(c) for c in range(32, 127))
_ESCAPES: Final = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "0": "\0"}
_QUANT_RE: Final = re.compile(r"\{(\d*)(,?)(\d*)\}")
_SetItem = tuple[int, int] | str  # a code point range, or a class letter (d D w W s S)


def _class_has(letter: str, ch: str) -> bool:
    if letter == "d":
        return ch.isdigit()
    if letter == "w":
        return ch.isalnum() or ch == "_"
    if letter == "s":
        return ch.isspace()
    return not _class_has(letter.lower(), ch)


def _char_pool(items: list[_SetItem], negate: bool) -> tuple[str, ...]:
    def member(ch: str) -> bool:
        return any(
            _class_has(item, ch) if isinstance(item, str) else item[0] <= ord(ch) <= item[1]
            for item in items
        )

    pool = [ch for ch in _PRINTABLE if member(ch) != negate]
    if not pool and not negate:  # only non-ASCII ranges: take their first characters
        for item in items:
            if isinstance(item, tuple):
                pool.extend(chr(c) for c in range(item[0], min(item[1], item[0] + 31) + 1))
    tidy = [ch for ch in pool if ch.isalnum() or ch in "_-."]
    if not pool:
        raise _PatternUnsupported("empty character class")
    return tuple(tidy or pool)


_Node = tuple[Any, ...]


class _Pattern:
    def __init__(self, source: str) -> None:
        self._src = source
        self._pos = 0
        self._root = self._alternation()
        if self._pos != len(source):
            raise _PatternUnsupported(source)

    def sample(self, rng: Random, stretch: int, *, exact: bool = False) -> str:
        """A string the pattern matches. Repetitions take low..low+stretch rounds (capped by
        the quantifier), or exactly that many with `exact`, to reach a minimum length."""
        out: list[str] = []
        self._emit(self._root, rng, stretch, exact, out)
        return "".join(out)

    def _emit(self, node: _Node, rng: Random, stretch: int, exact: bool, out: list[str]) -> None:
        if len(out) > _MAX_SAMPLE:
            return
        tag = node[0]
        if tag == "alt":
            for sub in rng.choice(node[1]):
                self._emit(sub, rng, stretch, exact, out)
        elif tag == "lit":
            out.append(node[1])
        elif tag == "set":
            out.append(rng.choice(node[1]))
        elif tag == "rep":
            low, high = node[2], node[3]
            top = low + stretch if high is None else min(high, low + stretch)
            for _ in range(top if exact else rng.randint(low, max(low, top))):
                self._emit(node[1], rng, stretch, exact, out)
        # "nop": anchors and word boundaries produce nothing

    def _peek(self) -> str:
        return self._src[self._pos] if self._pos < len(self._src) else ""

    def _alternation(self) -> _Node:
        branches = [self._sequence()]
        while self._peek() == "|":
            self._pos += 1
            branches.append(self._sequence())
        return ("alt", branches)

    def _sequence(self) -> list[_Node]:
        seq: list[_Node] = []
        while self._peek() not in ("", "|", ")"):
            seq.append(self._quantified(self._atom()))
        return seq

    def _quantified(self, atom: _Node) -> _Node:
        c = self._peek()
        if c in ("*", "+", "?"):
            self._pos += 1
            low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
        elif c == "{" and (m := _QUANT_RE.match(self._src, self._pos)) and (m[1] or m[3]):
            self._pos = m.end()
            low = int(m[1] or 0)
            high = int(m[3]) if m[3] else (None if m[2] else low)
        else:
            return atom
        if self._peek() in ("?", "+"):  # lazy / possessive: same strings
            self._pos += 1
        if self._peek() in ("*", "+", "?") or atom[0] == "nop":
            raise _PatternUnsupported(self._src)
        return ("rep", atom, low, high)

    def _atom(self) -> _Node:
        c = self._src[self._pos]
        self._pos += 1
        if c in ("^", "$"):
            return ("nop",)
        if c == ".":
            return ("set", tuple("abcdefghijklmnopqrstuvwxyz0123456789"))
        if c == "(":
            return self._group()
        if c == "[":
            return self._char_class()
        if c == "\\":
            item = self._escape(in_class=False)
            if len(item) == 2:  # a class escape such as \d
                return ("set", _char_pool([item[1]], negate=False))
            return ("lit", item) if item else ("nop",)
        if c in ("*", "+", "?"):
            raise _PatternUnsupported(self._src)
        return ("lit", c)

    def _group(self) -> _Node:
        src = self._src
        if src.startswith("?:", self._pos):
            self._pos += 2
        elif src.startswith(("?P<", "?<"), self._pos) and not src.startswith(
            ("?<=", "?<!"), self._pos
        ):
            end = src.find(">", self._pos)
            if end < 0:
                raise _PatternUnsupported(src)
            self._pos = end + 1
        elif src.startswith(("?=", "?!", "?<=", "?<!"), self._pos):
            # A lookaround produces nothing here; the caller's re.search decides.
            self._pos += 3 if src[self._pos + 1] == "<" else 2
            self._alternation()
            if self._peek() != ")":
                raise _PatternUnsupported(src)
            self._pos += 1
            return ("nop",)
        elif src.startswith("?", self._pos):
            flags = re.match(r"\?[aiLmsux]+\)", src[self._pos :])
            if not flags:  # backreferences, conditionals, scoped flags
                raise _PatternUnsupported(src)
            self._pos += flags.end()
            return ("nop",)
        node = self._alternation()
        if self._peek() != ")":
            raise _PatternUnsupported(src)
        self._pos += 1
        return node

    def _char_class(self) -> _Node:
        negate = self._peek() == "^"
        if negate:
            self._pos += 1
        items: list[_SetItem] = []
        first = True
        while True:
            c = self._peek()
            if c == "":
                raise _PatternUnsupported(self._src)
            if c == "]" and not first:
                self._pos += 1
                break
            first = False
            self._pos += 1
            start = self._escape(in_class=True) if c == "\\" else c
            if len(start) == 2:  # a class escape such as \d
                items.append(start[1])
                continue
            if self._peek() == "-" and self._src[self._pos + 1 : self._pos + 2] not in ("]", ""):
                self._pos += 1
                c2 = self._src[self._pos]
                self._pos += 1
                end = self._escape(in_class=True) if c2 == "\\" else c2
                if len(end) != 1 or ord(end) < ord(start):
                    raise _PatternUnsupported(self._src)
                items.append((ord(start), ord(end)))
            else:
                items.append((ord(start), ord(start)))
        return ("set", _char_pool(items, negate))

    def _escape(self, *, in_class: bool) -> str:
        """The character an escape stands for; the escape itself (backslash and letter) for a
        class such as `\\d`; '' for a zero-width escape outside a class."""
        c = self._peek()
        if c == "":
            raise _PatternUnsupported(self._src)
        self._pos += 1
        if c in "dDwWsS":
            return "\\" + c
        if c in _ESCAPES:
            return _ESCAPES[c]
        if c in ("x", "u"):
            size = 2 if c == "x" else 4
            digits = self._src[self._pos : self._pos + size]
            if len(digits) != size or not all(d in "0123456789abcdefABCDEF" for d in digits):
                raise _PatternUnsupported(self._src)
            self._pos += size
            return chr(int(digits, 16))
        if not in_class and c in "AZzbB":
            return ""
        if c.isalnum():  # backreferences, \p{...}, and other escapes we do not model
            raise _PatternUnsupported(self._src)
        return c
