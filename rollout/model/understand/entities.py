# Owns what the default model reads out of a message: e-mail addresses, URLs, quoted text,
# dates and times (understand.when), amounts of money and currencies, tickers, languages,
# places (with the roles "from" and "to" give them), people's and companies' names and the
# numbers left over. Each finder is a regular expression or a word list (understand.lexicon);
# the order they run in decides which reading of a word wins (a currency code is not a ticker,
# a month is not a place). Pure.
from __future__ import annotations

import datetime
import re
from typing import Final

import attrs

from rollout.model.understand import lexicon as lx
from rollout.model.understand.when import dates_of, times_of

__all__ = ["Entities", "entities_of"]

_EMAIL: Final = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_URL: Final = re.compile(r"https?://[^\s)>\]\"']+")
_QUOTED: Final = re.compile(r"\"([^\"\n]{1,200})\"|“([^”\n]{1,200})”|'([^'\n]{2,200})'(?!\w)")
_MONEY: Final = re.compile(
    r"([$€£¥])\s?(\d[\d,]*(?:\.\d+)?)|(\d[\d,]*(?:\.\d+)?)\s?([A-Z]{3}|[$€£¥]|"
    + "|".join(sorted(lx.CURRENCY_NAMES, key=len, reverse=True))
    + r")\b",
    re.I,
)
_NUMBER: Final = re.compile(r"(?<![\w.])-?\d+(?:,\d{3})*(?:\.\d+)?(?![\w@])")
_WORD_NUMBERS: Final = {
    w: i
    for i, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
        ]
    )
}
_CAPITALISED: Final = re.compile(
    r"\b[A-Z][a-zà-ÿ'\u2019-]+(?:\s+(?:de\s+)?[A-Z][a-zà-ÿ'\u2019-]+)*"
)
_TICKER: Final = re.compile(r"\$([A-Z]{1,5})\b|\b([A-Z]{2,5})\b")
#: Words that make a bare upper-case word a ticker (DNS alone is not one).
_MARKET: Final = re.compile(
    r"\b(stocks?|shares?|ticker|price|trading|trades?|quote|market)\b", re.I
)
#: Capitalised words that start a sentence rather than a name ("What's Carlos Rivera's ...").
_STARTERS: Final = frozenset(
    [
        "what's",
        "what",
        "which",
        "who",
        "whose",
        "where",
        "when",
        "how",
        "is",
        "are",
        "was",
        "can",
        "could",
        "would",
        "please",
        "the",
        "a",
        "an",
        "and",
        "or",
        "but",
        "i",
        "my",
        "our",
        "email",
        "send",
        "tell",
        "ask",
        "call",
        "check",
        "find",
        "show",
        "get",
        "give",
        "book",
        "schedule",
        "add",
        "create",
        "convert",
        "translate",
        "look",
        "search",
        "read",
        "open",
        "run",
        "write",
        "list",
        "remind",
        "meet",
        "meeting",
        "with",
        "hi",
        "hello",
        "hey",
        "dear",
        "thanks",
    ]
)


def _names(text: str) -> list[tuple[int, str]]:
    """Capitalised runs of `text` with their start, leading sentence-starters cut."""
    out = []
    for m in _CAPITALISED.finditer(text):
        start, run = m.start(), m.group(0)
        while " " in run and run.split(" ", 1)[0].lower() in _STARTERS:
            head, run = run.split(" ", 1)
            start += len(head) + 1
            run = run.lstrip()
        out.append((start, run))
    return out


_MULTIWORD: Final = re.compile(r"\b(?:" + "|".join(map(re.escape, lx.MULTIWORD_PLACES)) + r")\b")
_NOT_MONEY: Final = r"\b(?!\s+(?:" + "|".join(lx.CURRENCY_NAMES) + r")\b)"  # "Japanese yen"
_LANGUAGE: Final = re.compile(r"\b(" + "|".join(lx.LANGUAGES) + ")" + _NOT_MONEY, re.I)
_TARGET_LANGUAGE: Final = re.compile(
    r"\b(?:to|into|in)\s+(" + "|".join(lx.LANGUAGES) + ")" + _NOT_MONEY, re.I
)
_NOT_PLACES: Final = frozenset({"fahrenheit", "celsius", "kelvin", "english"})
_ROLE_BEFORE: Final = {"from": "origin", "to": "destination", "in": "at", "at": "at"}


@attrs.frozen(kw_only=True)
class Entities:
    emails: tuple[str, ...] = ()
    urls: tuple[str, ...] = ()
    quoted: tuple[str, ...] = ()
    dates: tuple[datetime.date, ...] = ()
    times: tuple[str, ...] = ()  # HH:MM, 24-hour
    amounts: tuple[tuple[float, str | None], ...] = ()  # (amount, currency code)
    currencies: tuple[str, ...] = ()  # ISO codes in the order named
    tickers: tuple[str, ...] = ()
    languages: tuple[str, ...] = ()  # the target language first ("into French")
    places: tuple[str, ...] = ()
    origin: str | None = None  # "from Boston"
    destination: str | None = None  # "to Chicago"
    people: tuple[str, ...] = ()
    orgs: tuple[str, ...] = ()  # other proper names inside the text (Acme Corp)
    numbers: tuple[float, ...] = ()  # numbers not read as anything above

    @property
    def kinds(self) -> frozenset[str]:
        """Which kinds of value the message holds."""
        present = {
            "email": self.emails,
            "url": self.urls,
            "date": self.dates,
            "time": self.times,
            "money": self.amounts,
            "currency": self.currencies,
            "ticker": self.tickers,
            "language": self.languages,
            "place": self.places,
            "person": self.people,
            "number": self.numbers,
        }
        return frozenset(k for k, v in present.items() if v)


def _dedupe(values: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(v for v in values if v))


def _number(text: str) -> float:
    return float(text.replace(",", ""))


def _currency(code: str) -> str | None:
    if code in lx.CURRENCY_SYMBOLS:
        return lx.CURRENCY_SYMBOLS[code]
    if code.upper() in lx.CURRENCIES and code.isupper():
        return code.upper()
    return lx.CURRENCY_NAMES.get(code.lower())


def _places(text: str) -> tuple[list[str], str | None, str | None]:
    """Places in order, and those "from" and "to" introduce. A known place anywhere; another
    capitalised run only after "in", "from", "to", "at" or "near"."""
    found: list[tuple[int, str, str | None]] = []
    for m in _MULTIWORD.finditer(text):
        found.append((m.start(), m.group(0), _role(text, m.start())))
    for m in _CAPITALISED.finditer(text):
        words = m.group(0).split()
        if any(f[0] <= m.start() < f[0] + len(f[1]) for f in found):
            continue
        if (
            len(words) > 1
            and any(w.lower() in lx.PLACES for w in words[1:])
            and not all(w.lower() in lx.PLACES for w in words)
        ):  # "Flights Madrid": the place in the run
            for w in words:
                if w.lower() in lx.PLACES:
                    start = m.start() + m.group(0).index(w)
                    found.append((start, w, _role(text, start)))
            continue
        if words[0].lower() in lx.PLACES:
            name = " ".join(w for w in words if w.lower() in lx.PLACES or len(words) > 1)
            if all(w.lower() in lx.PLACES for w in words) and len(words) > 1:
                for i, w in enumerate(words):  # "Boston Chicago": two places
                    found.append((m.start() + i, w, _role(text, m.start()) if i == 0 else None))
                continue
            found.append((m.start(), name, _role(text, m.start())))
            continue
        role = _role(text, m.start())
        lowered = {w.lower() for w in words}
        if role is None or lowered & lx.FIRST_NAMES or words[0] in lx.LANGUAGES:
            continue
        if lowered & _NOT_PLACES:
            continue
        if lowered & set(lx.MONTHS) | lowered & set(lx.WEEKDAYS):
            continue
        found.append((m.start(), m.group(0), role))
    found.sort(key=lambda f: f[0])
    places = [f[1] for f in found]
    origin = next((f[1] for f in found if f[2] == "origin"), None)
    destination = next((f[1] for f in found if f[2] == "destination"), None)
    if destination and not origin:  # "Madrid to Lisbon": the place before "to"
        before = [f[1] for f in found if f[1] != destination and f[2] != "destination"]
        origin = before[0] if before else None
    return places, origin, destination


def _role(text: str, start: int) -> str | None:
    before = re.findall(r"[A-Za-z]+", text[max(0, start - 12) : start])
    return _ROLE_BEFORE.get(before[-1].lower()) if before else None


_NOT_PEOPLE: Final = frozenset({"corp", "inc", "ltd", "llc", "co", "company", "group", "bank"})


def _people(text: str, places: set[str]) -> list[str]:
    """A known first name (and the surname after it), or two or three capitalised words inside
    a sentence that name no place, company, language, month or weekday."""
    out: list[str] = []
    calendar = set(lx.MONTHS) | set(lx.WEEKDAYS)
    for start, run in _names(text):
        name = re.sub(r"['\u2019]s$", "", run)
        words = name.split()
        if name in places or words[0] in lx.LANGUAGES:
            continue
        lowered = {w.lower() for w in words}
        if words[0].lower() in lx.FIRST_NAMES:
            out.append(" ".join(words[:2]))
            continue
        before = text[:start].rstrip()
        inside = bool(before) and before[-1] not in ".!?:\n"
        if inside and 2 <= len(words) <= 3 and not lowered & (lx.PLACES | _NOT_PEOPLE | calendar):
            out.append(name)
    return out


def _orgs(text: str, known: set[str]) -> list[str]:
    """Capitalised names inside a sentence that are not places, people, languages, months or
    weekdays (a company, a product)."""
    out = []
    for start, name in _names(text):
        before = text[:start].rstrip()
        words = name.split()
        if not before or before[-1] in ".!?:\n" or name in known or words[0] in lx.LANGUAGES:
            continue
        lowered = {w.lower() for w in words}
        if lowered & (set(lx.MONTHS) | set(lx.WEEKDAYS) | lx.FIRST_NAMES | lx.PLACES):
            continue
        out.append(name)
    return out


def entities_of(text: str) -> Entities:
    """The values `text` holds, each kind in the order the text names them."""
    text = re.sub(r"\b(?:US|U\.S\.|American|Canadian|Australian)\s+(dollars?)\b", r"\1", text)
    taken: list[tuple[int, int]] = []
    emails = [m.group(0) for m in _EMAIL.finditer(text)]
    taken += [m.span() for m in _EMAIL.finditer(text)]
    urls = [m.group(0).rstrip(".,;") for m in _URL.finditer(text)]
    taken += [m.span() for m in _URL.finditer(text)]
    quoted = [next(g for g in m.groups() if g) for m in _QUOTED.finditer(text)]
    dates = dates_of(text, taken)
    times = times_of(text, taken)
    amounts: list[tuple[float, str | None]] = []
    currencies: list[str] = []
    for m in _MONEY.finditer(text):
        code = _currency(m.group(1) or m.group(4))
        if code is None:
            continue
        amounts.append((_number(m.group(2) or m.group(3)), code))
        taken.append(m.span())
    for word in re.findall(r"[A-Za-z]+|[$€£¥]", text):
        code = _currency(word)
        if code is not None and (word.isupper() or word.lower() in lx.CURRENCY_NAMES):
            currencies.append(code)
    tickers: list[str] = []
    market = bool(_MARKET.search(text))
    for m in _TICKER.finditer(text):
        word = m.group(1) or m.group(2)
        if word in lx.CURRENCIES or word in lx.NOT_TICKERS:
            continue
        if m.group(1) or market or word in lx.COMPANIES.values():
            tickers.append(word)
    for word in re.findall(r"[A-Za-z]+", text):
        if word[0].isupper() and word.lower() in lx.COMPANIES:
            tickers.append(lx.COMPANIES[word.lower()])
    languages = [m.group(1).capitalize() for m in _LANGUAGE.finditer(text)]
    target = _TARGET_LANGUAGE.search(text)
    if target:
        languages.insert(0, target.group(1).capitalize())
    places, origin, destination = _places(text)
    people = _people(text, set(places))
    orgs = _orgs(text, {*places, *people})
    numbers: list[float] = []
    for m in _NUMBER.finditer(text):
        if not any(a <= m.start() < b for a, b in taken):
            numbers.append(_number(m.group(0)))
    for word in re.findall(r"[a-z]+", text.lower()):
        if word in _WORD_NUMBERS and word != "one":
            numbers.append(float(_WORD_NUMBERS[word]))
    return Entities(
        emails=_dedupe(emails),
        urls=_dedupe(urls),
        quoted=_dedupe(quoted),
        dates=tuple(dict.fromkeys(dates)),
        times=_dedupe(times),
        amounts=tuple(amounts),
        currencies=_dedupe(currencies),
        tickers=_dedupe(tickers),
        languages=_dedupe(languages),
        places=_dedupe(places),
        origin=origin,
        destination=destination,
        people=_dedupe(people),
        orgs=_dedupe(orgs),
        numbers=tuple(numbers),
    )
