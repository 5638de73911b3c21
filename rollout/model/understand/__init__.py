# The default model's reading of a message: what it is (small talk, a question, a task, a
# follow-up on earlier results, a request for a poem), what it is about (its topic and the
# concepts of understand.lexicon), the values it holds (understand.entities) and the arithmetic
# it asks for (understand.arith). Rules and word lists, no weights; pure and deterministic.
from __future__ import annotations

import functools
import re
from typing import Final

import attrs

from rollout.model.understand.arith import Arithmetic, arithmetic_of
from rollout.model.understand.entities import Entities, entities_of
from rollout.model.understand.text import concepts_of, stem, words_of

__all__ = ["Understanding", "understand"]

_SMALL_TALK: Final[tuple[tuple[str, re.Pattern[str]], ...]] = (
    ("thanks", re.compile(r"^\W*(thanks|thank you|thx|ty|cheers|much appreciated)\b", re.I)),
    ("bye", re.compile(r"^\W*(bye|goodbye|see you|good night|later)\b", re.I)),
    (
        "how_are_you",
        re.compile(
            r"\bhow are you\b|\bhow'?s it going\b|\bhow are things\b|^\W*what'?s up\b", re.I
        ),
    ),
    ("who_are_you", re.compile(r"\bwho are you\b|\bwhat can you do\b|\bwhat are you\b", re.I)),
    (
        "greeting",
        re.compile(r"^\W*(hi|hello|hey|hiya|howdy|yo|good (morning|afternoon|evening))\b", re.I),
    ),
    (
        "ack",
        re.compile(r"^\W*(ok|okay|cool|great|nice|got it|sounds good|perfect|awesome)\W*$", re.I),
    ),
)
_FOLLOW_UP: Final = re.compile(
    r"\b(again|repeat|what was|what were|what did (it|you|the)|you (just )?(said|told|found|got)"
    r"|earlier|previous(ly)?|last (time|result|answer)|remind me (of )?what|the (tool|result)s? "
    r"(said|says|returned)|what it said)\b|\bwas (that|it)\W*$",
    re.I,
)
#: A task on the text the message itself holds ("Extract the contact: ...").
_TRANSFORM: Final = re.compile(
    r"^\W*(?:please\s+)?(?:extract|pull out|parse|classify|categori[sz]e|rewrite|rephrase|"
    r"reformat|tag|label)\b[^:\"“]*[:\"“]",
    re.I,
)
_ELLIPTICAL: Final = re.compile(r"^\W*(and\b|what about|how about|same for|and for|what of)", re.I)
_CREATIVE: Final = re.compile(
    r"\b(haiku|poem|limerick|story|joke|song|slogan|tagline|riddle)s?\b", re.I
)
_EXPLAIN: Final = re.compile(
    r"^\W*(?:can you |could you |please )?(?:explain|describe|define|tell me about|what is|"
    r"what's|what are|who is|who was|how does|how do|why (?:is|do|does|are))\b",
    re.I,
)
_TASK_VERBS: Final = frozenset(
    [
        "send",
        "email",
        "mail",
        "book",
        "schedule",
        "create",
        "convert",
        "translate",
        "find",
        "search",
        "list",
        "read",
        "show",
        "run",
        "get",
        "check",
        "write",
        "add",
        "set",
        "remind",
        "look",
        "calculate",
        "compute",
        "open",
        "draft",
        "reply",
        "forward",
        "cancel",
        "delete",
        "update",
        "fetch",
        "lookup",
        "compare",
        "summarize",
        "summarise",
        "tell",
        "give",
        "plan",
        "order",
        "buy",
    ]
)
_TOPIC: Final = (
    re.compile(r"\b(?:about|regarding|on the topic of)\s+(.+?)[?.!]*$", re.I),
    re.compile(r"^\W*(?:explain|describe|tell me)\s+how\s+(.+?)\s+works?[?.!]*$", re.I),
    re.compile(
        r"^\W*(?:can you |could you |please )?(?:explain|describe|define|tell me about|what is|"
        r"what's|what are|who is|who was)\s+(.+?)[?.!]*$",
        re.I,
    ),
    re.compile(r"^\W*how (?:does|do)\s+(.+?)\s+work[?.!]*$", re.I),
    re.compile(r"^\W*what (?:does|do)\s+(.+?)\s+mean[?.!]*$", re.I),
    re.compile(r"^\W*why (?:is|do|does|are)\s+(.+?)[?.!]*$", re.I),
)
_SAY: Final = re.compile(
    r"\b(?:to say|saying|say|tell (?:him|her|them)|telling (?:him|her|them)|"
    r"to tell (?:him|her|them)|that says|with the message)\s+(?:that\s+)?(.+?)[.!?]*$",
    re.I,
)


@attrs.frozen(kw_only=True)
class Understanding:
    text: str
    intent: str  # small_talk, follow_up, creative, explain, task, question, statement,
    #              transform (a task on the text the message holds: extract, classify)
    small_talk: str | None  # greeting, thanks, bye, how_are_you, who_are_you, ack
    form: str | None  # haiku, poem, joke, ... (intent creative)
    topic: str  # what the message is about, in its own words ("autumn", "recursion")
    concepts: frozenset[str]
    entities: Entities
    arithmetic: Arithmetic | None
    said: str | None  # what a message to send should say ("to say hi": "Hi!")
    elliptical: bool = False  # "what about Berlin?": the subject of the turn before carries on

    words: tuple[str, ...] = ()  # the message's words, lower case

    asked: frozenset[str] = frozenset()  # its words and their stems ("sending": send)


def _topic(text: str) -> str:
    body = text.strip()
    for pattern in _TOPIC:
        m = pattern.search(body)
        if m:
            topic = re.sub(r"\s+(?:to me|for me|please|briefly|in simple terms)$", "", m.group(1))
            topic = re.sub(r"^(?:me|us)\s+", "", topic).strip(" ,")
            if topic:
                return topic
    return ""


_THAT: Final = re.compile(
    r"^\W*(?:please\s+)?(?:e-?mail|tell|message|text|notify|let)\b.*?\b(?:that|know that)\s+"
    r"(.+?)[.!]*$",
    re.I,
)


def _said(text: str) -> str | None:
    m = _SAY.search(text) or _THAT.search(text)
    if not m:
        return None
    said = m.group(1).strip().strip("\"'")
    said = re.sub(r"\s+(?:tomorrow|today|please)$", "", said)
    if not said:
        return None
    return (
        said[0].upper() + said[1:] + ("" if said[-1] in ".!?" else "!" if len(said) < 12 else ".")
    )


_PATHLIKE: Final = re.compile(
    r"(?:^|\s)(?:~|\.{1,2})?/[\w.-]+(?:/[\w.-]+)*|\b[\w-]+/[\w./-]+"
    r"|\b[\w-]+\.(?:py|md|txt|ya?ml|json|toml|cfg|ini|csv|js|ts|rs|go|sh|log|conf|html)\b"
)


@functools.lru_cache(maxsize=512)
def understand(text: str, before: str = "") -> Understanding:
    """What `text` says; `before` is the user's previous message, which an elliptical one
    ("what about MSFT?") carries on from. Cached (a rollout's steps read the same prompt, and
    the reading is pure); a bounded number of readings are kept."""
    stripped = text.strip()
    if before and _ELLIPTICAL.match(stripped):
        stripped = _resolved(stripped, before.strip())
        elliptical = True
    else:
        elliptical = False
    small = next((name for name, p in _SMALL_TALK if p.search(stripped)), None)
    if small and re.search(r"^\W*translate\b|[\"“']", stripped, re.I):
        small = None  # "Translate 'how are you?' into French" is a task
    words = words_of(stripped)
    if small in ("greeting", "thanks", "bye", "ack") and len(words) > 6:
        small = None  # "hi, can you convert 100 USD to EUR?" is a task said politely
    arithmetic = arithmetic_of(stripped)
    creative = _CREATIVE.search(stripped)
    if small is not None:
        intent = "small_talk"
    elif _FOLLOW_UP.search(stripped):
        intent = "follow_up"
    elif creative and re.search(r"\b(write|compose|tell|make|give|create)\b", stripped, re.I):
        intent = "creative"
    elif _EXPLAIN.search(stripped) and arithmetic is None:
        intent = "explain"
    elif words and words[0] in _TASK_VERBS:
        intent = "task"
    elif stripped.endswith("?") or (
        words
        and words[0]
        in {"what", "how", "who", "when", "where", "which", "why", "is", "are", "can", "does", "do"}
    ):
        intent = "question"
    else:
        intent = "statement"
    entities = entities_of(f"{before}\n{stripped}" if elliptical and before else stripped)
    if elliptical and before:  # the new message's values first, the earlier ones after
        entities = _carried(entities_of(stripped), entities)
    concepts = set(concepts_of(words))
    if arithmetic is None and len(entities.numbers) < 2:
        concepts.discard("math")  # "add a meeting" is not arithmetic
    else:
        concepts.add("math")
    if _PATHLIKE.search(stripped) and not entities.emails and not entities.urls:
        concepts.add("file")
    kinds = entities.kinds
    if "email" in kinds:
        concepts.add("email")
    if "ticker" in kinds:
        concepts.add("stock")
    if "money" in kinds and len(entities.currencies) >= 2:
        concepts.add("currency")
    if entities.languages and re.search(r"\b(translate|say|in|into)\b", stripped, re.I):
        concepts.add("translate")
    if entities.origin and entities.destination:
        concepts.add("travel")
    if entities.people and intent in ("question", "explain") and not concepts - {"email"}:
        concepts.add("contact")  # "What's Carlos Rivera's email address?"
    if _TRANSFORM.search(stripped):
        intent = "transform"
    return Understanding(
        text=stripped,
        intent=intent,
        small_talk=small,
        form=creative.group(1).lower() if creative else None,
        topic=_topic(stripped),
        concepts=frozenset(concepts),
        entities=entities,
        arithmetic=arithmetic,
        said=_said(stripped),
        elliptical=elliptical,
        words=tuple(words),
        asked=frozenset(words) | {stem(w) for w in words},
    )


_NEW_SUBJECT: Final = re.compile(
    r"^\W*(?:and|what about|how about|same for|and for|what of)\s+"
    r"(?:(of|in|for|at|to|from|into)\s+)?(.+?)\W*$",
    re.I,
)


def _resolved(text: str, before: str) -> str:
    """An elliptical message read as the previous one with its subject replaced ("What's the
    capital of Spain?", "And of Japan?": what's the capital of Japan?); the message itself
    when the previous one has no subject to replace."""
    m = _NEW_SUBJECT.match(text)
    if not m or len(before) > 300:
        return text
    prep, subject = m.group(1), m.group(2)
    if prep:
        at = [p for p in re.finditer(rf"\b{prep}\s+", before, re.I)]
        if at:
            start = at[-1].end()
            end = re.search(r"[?.!,;]|$", before[start:])
            stop = start + (end.start() if end else len(before) - start)
            return before[:start] + subject + before[stop:]
    runs = list(re.finditer(r"\b[A-Z][\w'-]*(?:\s+[A-Z][\w'-]*)*|\b[A-Z]{2,5}\b", before))
    runs = [r for r in runs if r.start() > 0]  # not the sentence's first word
    if runs:
        last = runs[-1]
        return before[: last.start()] + subject + before[last.end() :]
    return text


def _carried(new: Entities, both: Entities) -> Entities:
    """`new`, with each kind of value it lacks taken from `both` (the messages together)."""
    fields = {}
    for field in attrs.fields(Entities):
        mine = getattr(new, field.name)
        fields[field.name] = mine if mine else getattr(both, field.name)
    return Entities(**fields)
