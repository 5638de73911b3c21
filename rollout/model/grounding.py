# What the default model knows of the conversation when it writes: the latest user message
# (its content words, the paths, places, names and URLs it mentions, what it asks for, and its
# meaning: rollout.model.understand), the tool results since then (rollout.model.observations:
# commands run, files and directories listed, first lines read) and the latest few results of
# earlier turns. Read from a bounded window of the context's items, each output cut to a
# bounded prefix, so the cost does not grow with the conversation. Pure: no I/O, no clocks.
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

import attrs

from protocol.items import (
    Message,
    text_of,
)
from rollout.conversation.context import Context
from rollout.model.args.vocabulary import Vocabulary
from rollout.model.observations import Observation, listed, observations_of
from rollout.model.understand import Understanding, understand
from rollout.model.understand.arith import number_text
from rollout.model.understand.results import parsed

MAX_OBSERVATIONS: Final = 24  # tool results since the prompt that are read (the latest ones)
UNDERSTOOD_CHARS: Final = 4_000  # of the prompt read for its meaning
HISTORY_ITEMS: Final = 160  # items before the prompt looked through for earlier results
MAX_HISTORY: Final = 8  # earlier results kept (the latest ones)

# fmt: off
STOPWORDS: Final = frozenset(
    """
a about above after again all also am an and any are as at be because been before being below
between both but by can could did do does doing done down during each either every few for from
further get give go had has have having he her here hers him his how i if in into is it its itself
just let like me more most my no nor not now of off on once only or other our out over own please
same she should so some such tell than that the their them then there these they this those
through to too under until up us very was we were what when where which while who whom why will
with would you your yours show find look see run list check make use using want need know ok
okay thanks thank hi hello hey could would can may might must shall
""".split()  # noqa: SIM905
)
# fmt: on
_PATH: Final = re.compile(
    r"(?<![\w/.@-])(?:\.{1,2}/|/)?(?:[\w@+-]+/)*[\w@+-]+(?:\.[A-Za-z0-9]{1,8})+(?![\w/])"
    r"|(?<![\w/.@-])(?:\.{1,2}/|/)?(?:[\w@+-]+/)+[\w@+-]*/?(?![\w])"
)
_URL: Final = re.compile(r"https?://[^\s)>\]\"']+")
_EMAIL: Final = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_QUOTED: Final = re.compile(r"`([^`\n]{1,80})`|\"([^\"\n]{1,80})\"|'([^'\n]{2,80})'")
_IDENT: Final = re.compile(r"\b[A-Za-z_][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b|\b[a-z]+[A-Z]\w*\b")
_CAPITAL: Final = re.compile(r"\b[A-Z][a-zà-ÿ'\u2019-]+(?:\s+[A-Z][a-zà-ÿ'\u2019-]+)*")
_EXTENSIONS: Final = re.compile(r"\.[A-Za-z0-9]{1,8}$")

# What a prompt asks for, by its words (tested against the lower-cased prompt).
_CURRENT: Final = re.compile(
    r"\b(latest|current(ly)?|today'?s?|tonight|this (week|month|year)|news|right now|recent(ly)?"
    r"|up[- ]to[- ]date|weather|forecast|price|stock|score|release notes|search the web"
    r"|web search|look (it )?up online|on the web|online|20[2-3]\d)\b"
)
_CODING: Final = re.compile(
    r"\b(files?|folders?|director(y|ies)|repo(sitory)?|code(base)?|functions?|class(es)?|bugs?"
    r"|fix|tests?|pytest|build|compile|commands?|git|diff|commits?|branch|grep|ls|lint|refactor"
    r"|implement|modules?|packages?|scripts?|readme|errors?|traceback|stack trace|crash(es)?"
    r"|failing|fails?|install|dependenc(y|ies)|here|workspace|project|source|config)\b"
    r"|\.(py|ts|js|rs|go|md|toml|json|yaml|yml|c|h|cpp|java|sh)\b"
)
_PERSON: Final = re.compile(r"\b(ask me|ask the user|ask (some )?questions|clarify|interview me)\b")
_PLAN: Final = re.compile(
    r"\b(plan|goals?|todo|to-do|objective|track (the )?progress|step by step)\b"
)
_IMAGE: Final = re.compile(r"\b(image|screenshot|picture|photo|diagram|png|jpe?g|gif)\b")
_WRITE: Final = re.compile(
    r"\b(fix|write|edit|change|modify|create|add|implement|refactor|rename|delete|remove|update"
    r"|patch|apply)\b"
)
#: What a prompt can ask for that some kinds of tool need, by name (Grounding.asks).
ASKS: Final = {"person": _PERSON, "plan": _PLAN, "image": _IMAGE, "write": _WRITE}
_INTENTS: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("count", re.compile(r"\b(how many lines|line count|count (the )?lines|lines of code|wc)\b")),
    ("branch", re.compile(r"\b((which|what|current) (git )?branch|branch am i|git branch)\b")),
    ("test", re.compile(r"\b(tests?|pytest|failing|fails?|passes?|suite|ci)\b")),
    ("git", re.compile(r"\b(git|diff|commits?|branch|changes|changed|staged|status)\b")),
    ("search", re.compile(r"\b(where|grep|search|occurrences?|usages?|uses of|defined|todo)\b")),
    ("read", re.compile(r"\b(read|open|show|print|cat|explain|contents?|what does|summari[sz]e)")),
    ("build", re.compile(r"\b(build|compile|make|install|lint)\b")),
    ("list", re.compile(r"\b(list|ls|files|folders?|director(y|ies)|tree|layout|structure|here)")),
)


@attrs.frozen(kw_only=True)
class Grounding:
    prompt: str
    words: tuple[str, ...] = ()
    places: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()  # mentioned in the prompt
    dirs: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()
    observations: tuple[Observation, ...] = ()
    searches: int = 0
    files_seen: tuple[str, ...] = ()  # files listed by tool outputs, in order
    dirs_seen: tuple[str, ...] = ()
    #: Tool results of earlier turns (before the latest user message), the latest last.
    history: tuple[Observation, ...] = ()
    understanding: Understanding = attrs.field(
        default=attrs.Factory(
            lambda self: understand(self.prompt[:UNDERSTOOD_CHARS]), takes_self=True
        )
    )

    # -- what the prompt asks -------------------------------------------------------------------

    @property
    def lower(self) -> str:
        return self.prompt.lower()

    @property
    def current_info(self) -> bool:
        return bool(_CURRENT.search(self.lower))

    @property
    def coding(self) -> bool:
        return bool(_CODING.search(self.lower)) or bool(self.paths)

    def asks(self, what: str) -> bool:
        """Whether the prompt asks for `what` (one of ASKS: a person, a plan, an image, or
        that files be written)."""
        return bool(ASKS[what].search(self.lower))

    @property
    def intent(self) -> str:
        """What a coding prompt is about: count (lines), branch, test, git, search, read, build,
        list, or code."""
        for name, pattern in _INTENTS:
            if pattern.search(self.lower):
                return name
        return "code"

    @property
    def commands(self) -> tuple[str, ...]:
        return tuple(o.command for o in self.observations if o.command)

    def vocabulary(
        self,
        pick: int = 0,
        command: str | None = None,
        meant: Callable[[str, Any], Any] | None = None,
    ) -> Vocabulary:
        query = " ".join([*self.places[:2], *self.words[:6]]) or None
        first = re.split(r"(?<=[.!?])\s", self.prompt.strip(), maxsplit=1)[0][:120]
        return Vocabulary(
            command=command,
            query=query,
            text=first or None,
            prompt_paths=self.paths,
            prompt_dirs=self.dirs,
            seen_paths=self.files_seen,
            places=self.places,
            names=self.names,
            words=self.words,
            urls=self.urls,
            pick=pick,
            meant=meant,
        )


def ground(ctx: Context) -> Grounding:
    """What the model knows of `ctx`: its latest user message, the tool results since, and the
    latest few results of earlier turns."""
    prompt = ctx.last_user_text
    items = ctx.items
    start = len(items)
    for start in range(len(items) - 1, -1, -1):
        item = items[start]
        if isinstance(item, Message) and item.role == "user":
            break
    else:
        start = -1
    observations, searches = observations_of(ctx, items[start + 1 :], MAX_OBSERVATIONS)
    earlier = items[max(0, start - HISTORY_ITEMS) : max(0, start)]
    history, _ = observations_of(ctx, earlier, MAX_HISTORY)
    before = next(
        (
            text_of(i.content)
            for i in reversed(earlier)
            if isinstance(i, Message) and i.role == "user"
        ),
        "",
    )
    files, dirs = listed(observations)
    paths = _dedupe(m.group(0) for m in _PATH.finditer(prompt) if not _URL.match(m.group(0)))
    urls = _dedupe(m.group(0).rstrip(".,;") for m in _URL.finditer(prompt))
    emails = [m.group(0) for m in _EMAIL.finditer(prompt)]
    paths = tuple(
        p
        for p in paths
        if not any(p in u for u in [*urls, *emails]) and not re.fullmatch(r"[\d.,]+", p)
    )
    return Grounding(
        prompt=prompt,
        words=_words(prompt),
        places=_places(prompt),
        names=_names(prompt),
        paths=tuple(p for p in paths if not p.endswith("/") and _EXTENSIONS.search(p)),
        dirs=tuple(p.rstrip("/") or "/" for p in paths if p.endswith("/") or "." not in p),
        urls=urls,
        observations=observations,
        searches=searches,
        files_seen=files,
        dirs_seen=dirs,
        history=history,
        understanding=understand(
            _resolved(prompt, history)[:UNDERSTOOD_CHARS], before[:UNDERSTOOD_CHARS]
        ),
    )


_ANAPHORA: Final = re.compile(r"\b(?:that|it|the result|this)\b", re.I)


def _resolved(prompt: str, history: Sequence[Observation]) -> str:
    """`prompt` with "that" standing for the number the latest earlier result gave ("now
    multiply that by 2": 42), so the arithmetic reads on."""
    if not history or not _ANAPHORA.search(prompt) or not re.search(r"\d", prompt):
        return prompt
    value = parsed(history[-1].output)
    if isinstance(value, dict):
        value = next((v for k, v in value.items() if k in ("result", "answer", "value")), None)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return prompt
    return _ANAPHORA.sub(number_text(value), prompt, count=1)


def _dedupe(values: Iterable[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(v for v in values if v))


def _words(prompt: str) -> tuple[str, ...]:
    found = re.findall(r"[A-Za-z][A-Za-z'-]{2,}", prompt)
    return _dedupe(w.lower() for w in found if w.lower() not in STOPWORDS)


def _places(prompt: str) -> tuple[str, ...]:
    """Capitalised words (runs of them: San Francisco); those that start a sentence only when
    there are no others, since they may be capitalised for that alone ("Weather in Paris")."""
    inner: list[str] = []
    initial: list[str] = []
    for m in _CAPITAL.finditer(prompt):
        words = [w for w in m.group(0).split() if w.lower() not in STOPWORDS]
        if not words or len(words[0]) < 2 or words[0] in ("README", "OK"):
            continue
        before = prompt[: m.start()].rstrip()
        starts = not before or before[-1] in ".!?:\n"
        if starts and m.group(0).split()[0] == words[0] and len(words) > 1:
            inner.append(" ".join(words[1:]))  # "Weather Paris" is not a name; "Paris" is
            continue
        (initial if starts else inner).append(" ".join(words))
    return _dedupe(inner or initial)


def _names(prompt: str) -> tuple[str, ...]:
    quoted = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(prompt)]
    return _dedupe([*quoted, *_IDENT.findall(prompt)])
