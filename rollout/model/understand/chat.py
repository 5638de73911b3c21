# Owns what the default model says when no tool result is there to report: small talk, the
# arithmetic it does itself, a haiku or a joke on the topic asked for, a short explanation (from
# understand.lexicon's glossary, or general sentences about the topic), and an honest reply when
# the request needs a tool it was not given. Every random choice comes from the caller's
# `random.Random`. Pure.
from __future__ import annotations

import re
from random import Random
from typing import Final

from rollout.conversation import tokens as tok
from rollout.model.understand import Understanding
from rollout.model.understand.lexicon import CAPITALS, GLOSSARY

__all__ = ["reply"]

_SMALL_TALK: Final = {
    "greeting": (
        "Hello! How can I help you today?",
        "Hi there! What can I do for you?",
        "Hey! What would you like to work on?",
    ),
    "thanks": (
        "You're welcome! Let me know if there is anything else I can do.",
        "You're welcome. Anything else?",
        "Glad I could help!",
    ),
    "bye": ("Goodbye! Have a great day.", "Take care, and come back any time."),
    "how_are_you": (
        "I'm doing well, thanks for asking. What can I help you with?",
        "All good here, thank you! What's on your mind?",
    ),
    "who_are_you": (
        "I'm an AI assistant. I can answer questions, explain things, write short texts and "
        "use the tools this conversation gives me.",
    ),
    "ack": ("Great. Let me know what you'd like to do next.", "Sounds good!"),
}
_NEEDS_TOOL: Final = {
    "weather": "I can't check the weather from here, since no weather tool is available to "
    "me. A weather site or app will have the current conditions{where}.",
    "stock": "I don't have access to live market data here, so I can't give you a current "
    "price{what}. A finance site will show the latest quote.",
    "currency": "I don't have live exchange rates here, so I can't convert that exactly. A "
    "currency converter or your bank will give you today's rate.",
    "email": "I can't send e-mail from here: no e-mail tool is available to me. I can help "
    "you draft the message, though.",
    "calendar": "I can't add events to a calendar from here, but I can help you word the "
    "invitation.",
    "travel": "I can't search for flights from here. An airline or travel site will list "
    "the options{route}.",
}
_HAIKU: Final = (
    ("{T} in the air", "quiet as the evening light", "a slow breath of change"),
    ("soft {t} settles", "the world grows still for a while", "then begins again"),
    ("thinking of {t}", "a small bright thing in the dark", "I hold it and wait"),
)
_SEASONS: Final = {
    "autumn": ("red leaves drift and fall", "the maple lets go its gold", "cool wind in the trees"),
    "winter": (
        "snow on the cold roofs",
        "breath hangs white in morning air",
        "the long night is still",
    ),
    "spring": (
        "green shoots through the frost",
        "cherry blossoms on the wind",
        "the days grow longer",
    ),
    "summer": ("heat on the still road", "cicadas sing in the pines", "evening comes slowly"),
}
_JOKES: Final = (
    "Why did the {t} go to therapy? It had too many unresolved issues.",
    "I'd tell you a joke about {t}, but I'm still working on the punchline.",
)


def _topic(u: Understanding) -> str:
    return u.topic or "this"


def reply(u: Understanding, rng: Random, tokens: int = 40) -> str:
    """An answer to `u` with no tool results to go on; an explanation of about `tokens`
    tokens."""
    if u.intent == "small_talk" and u.small_talk:
        said = rng.choice(_SMALL_TALK[u.small_talk])
        part = re.match(r"^\W*good (morning|afternoon|evening)", u.text, re.I)
        if part:  # answered in kind
            return f"Good {part.group(1).lower()}! " + said.split("! ", 1)[-1]
        return said
    if u.arithmetic is not None:
        return u.arithmetic.sentence()
    say = re.match(r"^\W*(?:please\s+)?say\s+[\"']?(.+?)[\"']?[.!]*$", u.text, re.I)
    if say:  # "Say hello."
        words = say.group(1)
        return words[0].upper() + words[1:] + ("" if words[-1] in "?!" else "!")
    if u.intent == "creative":
        return _creative(u, rng)
    for pattern, answer in _CANNED:
        m = pattern.search(u.text)
        if m:
            return answer(m, u, rng)
    advice = re.search(r"\b(?:a good|the best|good|best)\s+(.+?)[?.!]*$", u.text, re.I)
    if advice and u.intent in ("question", "explain"):
        return _advice(advice.group(1), u, rng)
    for concept, text in _NEEDS_TOOL.items():
        if concept in u.concepts and u.intent in ("question", "task"):
            e = u.entities
            return text.format(
                where=f" in {e.places[0]}" if e.places else "",
                what=f" for {e.tickers[0]}" if e.tickers else "",
                route=f" from {e.origin} to {e.destination}" if e.origin and e.destination else "",
            )
    capital = re.search(r"\bcapital (?:city )?of\s+(.+?)[?.!]*$", u.text, re.I)
    if capital:
        country = capital.group(1).strip()
        city = CAPITALS.get(country.lower())
        if city is not None:
            return f"The capital of {country} is {city}."
        return f"I'm not sure what the capital of {country} is."
    who = re.match(r"^\W*who (?:is|was)\s+(.+?)[?.!]*$", u.text, re.I)
    if who:
        return (
            f"I don't have reliable information about {who.group(1)}, so I'd rather not "
            "guess. A quick search would tell you more."
        )
    if u.intent == "explain" or u.topic:
        return _explain(u, rng, tokens)
    if u.intent == "follow_up":
        return "I don't have an earlier result to go back to in this conversation."
    if re.search(
        r"\b(tests?|build|code|bug|errors?|compile|repo|files?|scripts?|functions?)\b", u.text, re.I
    ):
        return (
            "I can't run commands or open files from here, so I can't check that directly. "
            "If you paste the relevant output or code, I'll go through it with you."
        )
    if u.intent == "task":
        return (
            "I can't do that directly with what I have here, but I can walk you through the "
            "steps or draft what you need."
        )
    if u.intent == "question":
        return rng.choice(
            (
                "I don't know that one, and I have no tool here to look it up.",
                "I'm not sure, and I'd rather not guess without a way to check.",
            )
        )
    return rng.choice(
        (
            "Could you tell me a bit more about what you need? I'm happy to help.",
            "I'm not sure I follow. Could you say a little more about what you're after?",
        )
    )


_PHRASES: Final = {
    "hello": {"French": "Bonjour", "Spanish": "Hola", "German": "Hallo", "Italian": "Ciao"},
    "good morning": {
        "French": "Bonjour",
        "Spanish": "Buenos días",
        "German": "Guten Morgen",
        "Italian": "Buongiorno",
    },
    "thank you": {"French": "Merci", "Spanish": "Gracias", "German": "Danke", "Italian": "Grazie"},
    "goodbye": {
        "French": "Au revoir",
        "Spanish": "Adiós",
        "German": "Auf Wiedersehen",
        "Italian": "Arrivederci",
    },
    "please": {"French": "S'il vous plaît", "Spanish": "Por favor", "German": "Bitte"},
}
_IDEAS: Final = (
    "a small dinner with the people who matter most",
    "an afternoon outdoors, with a picnic or a walk somewhere new",
    "a games night with snacks and a playlist",
    "a themed evening, with a dress code everyone can manage",
    "a day trip to a place nobody has been to yet",
)
_FEELINGS: Final = re.compile(
    r"\b(?:i'?m|i am|i feel|feeling)\s+(?:so |very |really |a bit |kind of )?"
    r"(sad|down|tired|stressed|anxious|lonely|upset|angry|worried|happy|great|excited)\b",
    re.I,
)


def _translated(m: re.Match[str], u: Understanding, rng: Random) -> str:
    phrase = m.group(1).strip(" '\"").lower()
    lang = u.entities.languages[0] if u.entities.languages else ""
    known = _PHRASES.get(phrase, {}).get(lang)
    if known:
        return f'In {lang}, "{phrase}" is "{known}".'
    return (
        f"I don't have a translation tool here, and I'd rather not guess at the {lang or 'right'}"
        f' wording for "{phrase}".'
    )


def _feeling(m: re.Match[str], u: Understanding, rng: Random) -> str:
    mood = m.group(1).lower()
    if mood in ("happy", "great", "excited"):
        return f"That's wonderful to hear! What has you feeling {mood}?"
    return (
        f"I'm sorry you're feeling {mood}. Do you want to talk about what's going on? "
        "Sometimes it helps to put it into words."
    )


def _ideas(m: re.Match[str], u: Understanding, rng: Random) -> str:
    words = {"two": 2, "three": 3, "four": 4, "five": 5}
    n = int(m.group(1)) if m.group(1).isdigit() else words.get(m.group(1).lower(), 3)
    ideas = list(_IDEAS)
    rng.shuffle(ideas)
    listed = "\n".join(f"{i}. {idea[0].upper()}{idea[1:]}." for i, idea in enumerate(ideas[:n], 1))
    return f"Here are {min(n, len(ideas))} ideas for {m.group(2)}:\n{listed}"


def _draft(m: re.Match[str], u: Understanding, rng: Random) -> str:
    what = m.group(1).lower()
    return (
        f"Sure. A good {what} has three parts: a short opening that says why you are writing, "
        "a middle with the two or three points that matter most, and a friendly close with "
        f"what should happen next. Tell me who the {what} is for and what it should achieve, "
        "and I'll draft it."
    )


_CANNED: Final = (
    (
        re.compile(r"\btranslate\s+(.+?)\s+(?:to|into)\s+[A-Z][a-z]+\W*$", re.I),
        _translated,
    ),
    (_FEELINGS, _feeling),
    (
        re.compile(r"\b(\d+|two|three|four|five)\s+ideas?\s+(?:for|about|on)\s+(.+?)[?.!]*$", re.I),
        _ideas,
    ),
    (
        re.compile(
            r"\b(?:write|draft|help me (?:write|with))\s+(?:me\s+)?(?:a|an|my)\s+"
            r"((?:\w+\s+)?(?:letter|essay|speech|bio|post|note|message|email|resume|cv))\b",
            re.I,
        ),
        _draft,
    ),
    (
        re.compile(r"^\W*what time is it|\bwhat'?s the time\b|\bwhat (?:day|date) is it", re.I),
        lambda m, u, rng: (
            "I don't have access to a clock or calendar here, so I can't tell "
            "you the current time or date."
        ),
    ),
    (
        re.compile(r"\brecommend (?:me )?(?:a|some)\s+(?:good\s+)?(book|novel|movie|film)s?", re.I),
        lambda m, u, rng: (
            'A widely loved pick is "The Remains of the Day" by Kazuo Ishiguro: short, '
            "quiet and moving. If you tell me what you usually enjoy, I can suggest something "
            "closer to your taste."
            if m.group(1).lower() in ("book", "novel")
            else 'A safe choice most people enjoy is "Spirited Away", Hayao Miyazaki\'s '
            "animated film. Tell me what you liked recently and I can narrow it down."
        ),
    ),
    (
        re.compile(
            r"^\W*(?:summari[sz]e|tell me the plot of|what happens in)\s+(.+?)[?.!]*$", re.I
        ),
        lambda m, u, rng: (
            f"I don't know {m.group(1)} well enough to summarise it reliably. "
            "If you paste the text, I'll summarise it for you."
        ),
    ),
    (
        re.compile(r"^\W*how (?:do|can|should) (?:i|you|we)\s+(.+?)[?.!]*$", re.I),
        lambda m, u, rng: (
            f"To {m.group(1)}, start with what you need at hand, then take it "
            "one step at a time and check the result as you go. If you tell me what you have to "
            "work with, I can give you exact steps."
        ),
    ),
)


def _advice(what: str, u: Understanding, rng: Random) -> str:
    """An answer to "what's a good X?": a short rule of thumb and an example."""
    example = ""
    if "subject" in what.lower():
        kind = re.search(r"\bfor an? (.+?)(?: email| e-mail| message)?$", what, re.I)
        occasion = kind.group(1) if kind else "the message"
        if "thank" in occasion.lower():
            example = ' For example: "Thank you for your help this week".'
        else:
            example = f' For example: "A quick note about {occasion}".'
    return (
        f"A good {what} is short, specific and friendly: say what it is about in a few words."
        + example
    )


def _creative(u: Understanding, rng: Random) -> str:
    topic = _topic(u)
    t = re.sub(r"^(?:the|a|an)\s+", "", topic, flags=re.I).lower()
    if u.form == "haiku":
        lines = _SEASONS.get(t) or rng.choice(_HAIKU)
        return "\n".join(line.format(t=t, T=t.capitalize()) for line in lines)
    if u.form in ("joke", "riddle"):
        return rng.choice(_JOKES).format(t=t)
    if u.form in ("poem", "limerick", "song"):
        return (
            f"Of {t} I write a little verse,\n"
            "in lines that could be so much worse;\n"
            f"for {t} is fine, and {t} is bright,\n"
            "and keeps me company tonight."
        )
    if u.form in ("slogan", "tagline"):
        return f'"{t.capitalize()}: made simple, made yours."'
    return (
        f"Once there was a small town where everyone cared about {t}. One day a stranger "
        f"arrived with a question no one could answer, and by the end of the week the whole "
        f"town had learned something new about {t}, and about each other."
    )


_MORE: Final = (
    "At its core, {topic} is best understood through what it is for and how it is used in "
    "practice.",
    "Most introductions to {topic} start with the basic ideas and then work through a few "
    "concrete examples.",
    "The details vary from case to case, but the central idea stays the same.",
    "People often find that {topic} makes much more sense once they have seen it applied to a "
    "real problem.",
    "A good way to learn more is to try a small example yourself and see how it behaves.",
    "If you tell me which part of {topic} matters most to you, I can go deeper.",
)


def _explain(u: Understanding, rng: Random, tokens: int) -> str:
    topic = _topic(u)
    key = topic.lower().rstrip("?.! ")
    known = next(
        (GLOSSARY[n] for n in (key, re.sub(r"^(?:the|a|an)\s+", "", key)) if n in GLOSSARY), None
    )
    head = topic[0].upper() + topic[1:] if topic else "It"
    first = known or f"{head} is a broad subject, so here is the short version."
    more = [m.format(topic=topic) for m in _MORE]
    rng.shuffle(more)
    return _sized(first, more, tokens)


def _sized(first: str, more: list[str], tokens: int) -> str:
    """`first`, then sentences of `more` until about `tokens` tokens; cut at a sentence end
    when `first` alone runs past one and a half times that."""
    sentences = re.split(r"(?<=[.!?])\s+", first)
    out = sentences[0]
    for s in sentences[1:]:
        if tok.count(out + " " + s) > tokens * 1.5:
            return out
        out += " " + s
    while more and tok.count(out) < tokens * 0.8:
        s = more.pop()
        if tok.count(out + " " + s) > tokens * 1.5:
            break
        out += " " + s
    return out
