# Filler text of a declared size for workloads: instructions, tool descriptions and tool outputs
# of about so many bytes or so many o200k tokens. `words_of_tokens` is the cheap path for fleets
# of agents (no tokenizer call: every word of its pool is one token, with or without a leading
# space, so N words and line breaks are exactly N tokens).
from __future__ import annotations

import random

from rollout.conversation.tokens import count
from rollout.model.policy import sentence

#: 64 words each of which is one o200k token alone and after a space (tests check it); a
#: random byte's low six bits pick one.
_POOL = (
    "the a and in is for that with from not if else return self import class def value file "
    "path line none true false raise assert print result data name type list dict str int "
    "function args output input parse token model field query index key run check main config "
    "option default call method object string number item node tree text base user time"
)
ONE_TOKEN_WORDS: tuple[str, ...] = tuple(_POOL.split())
LINE_WORDS = 12  # words per line of `words_of_tokens` (each line break is one more token)


def text_of_bytes(rng: random.Random, size: int) -> str:
    """English-looking sentences cut to `size` characters."""
    out: list[str] = []
    total = 0
    while total < size:
        s = sentence(rng, rng.randint(8, 24))
        out.append(s)
        total += len(s) + 1
    return " ".join(out)[:size]


def text_of_tokens(rng: random.Random, tokens: int) -> str:
    """Sentences of about `tokens` o200k tokens (a word is about a token; counted per sentence)."""
    out: list[str] = []
    total = 0
    while total < tokens:
        text = sentence(rng, min(rng.randint(8, 24), max(1, tokens - total - 1)))
        out.append(text)
        total += count(text) + 1
    return " ".join(out)


def words_of_tokens(rng: random.Random, tokens: int) -> str:
    """Lines of one-token words, exactly `tokens` o200k tokens (at least one), without counting:
    a line of k words is k tokens and each line break one more (the last line takes the word
    a break would leave alone)."""
    total = max(1, tokens)
    full, rest = divmod(total, LINE_WORDS + 1)
    breaks = full if rest else full - 1
    pool = ONE_TOKEN_WORDS
    words = [pool[b & 63] for b in rng.randbytes(total - breaks)]
    end = LINE_WORDS * breaks
    lines = [" ".join(words[i : i + LINE_WORDS]) for i in range(0, end, LINE_WORDS)]
    lines.append(" ".join(words[end:]))
    return "\n".join(lines)
