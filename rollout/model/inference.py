# Simulated inference: the prefix cache (which prompt tokens the engine already holds, reported
# as `cached_tokens` and not prefilled again; entries live as long as the request's retention or
# TTL says; explicit breakpoints cache a prefix ending exactly there) and the pacing of a sampling
# step by an InferenceProfile: time to first token, prefill of the uncached tokens, then decode at
# a set tokens/s. Pacing sleeps to deadlines (no drift, no per-token sleep below a millisecond).
from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import attrs
import trio

from protocol.deltas import plain
from rollout.conversation import tokens as tok
from rollout.conversation.blocks import BLOCK
from rollout.conversation.context import Context
from rollout.model import pieces as p
from rollout.model.profiles import CACHE_TTL_S, DEFAULT_RETENTION, InferenceProfile

MIN_CACHED_PROMPT = 1024  # prompts shorter than this never hit the cache (as the real API)
MAX_BREAKPOINTS_READ = 80  # explicit breakpoints a lookup considers (the latest ones)


@attrs.frozen(kw_only=True)
class CacheOptions:
    """How a request uses the prefix cache (`prompt_cache_retention`, `prompt_cache_options`).

    `implicit`: the prompt's 128-token blocks are written (the implicit breakpoint), plus up to
    three explicit breakpoints; with `mode: explicit`, only up to four explicit breakpoints are
    written, and a prompt without any does not use the cache at all.
    """

    ttl_s: float = CACHE_TTL_S[DEFAULT_RETENTION]
    implicit: bool = True

    @classmethod
    def of(cls, retention: str | None, options: Mapping[str, Any] | None) -> CacheOptions:
        options = options or {}
        ttl = options.get("ttl") or retention or DEFAULT_RETENTION
        return cls(ttl_s=CACHE_TTL_S[ttl], implicit=options.get("mode") != "explicit")

    @property
    def writes(self) -> int:
        """Explicit breakpoints one request writes."""
        return 3 if self.implicit else 4


@attrs.define
class PrefixCache:
    """Hashes of prompt prefixes each engine holds, with their expiry (FIFO-bounded): chain
    hashes of 128-token blocks, and prefixes ending at explicit breakpoints."""

    capacity_blocks: int = 1 << 20
    _engines: dict[str, dict[int, float]] = attrs.field(factory=dict)

    def lookup(self, engine: str, hashes: list[int], now: float = -math.inf) -> int:
        """How many leading blocks of `hashes` the engine holds (binary search on the prefix)."""
        blocks = self._engines.get(engine)
        if not blocks or not hashes:
            return 0
        lo, hi = 0, len(hashes)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if blocks.get(hashes[mid - 1], -math.inf) > now:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def size(self, engine: str) -> int:
        """Entries the engine holds."""
        return len(self._engines.get(engine, {}))

    def holds(self, engine: str, key: int, now: float = -math.inf) -> bool:
        return self._engines.get(engine, {}).get(key, -math.inf) > now

    def insert(
        self,
        engine: str,
        hashes: Sequence[int],
        start: int = 0,
        expires_at: float = math.inf,
        slack: float = 0.0,
    ) -> None:
        """Write `hashes[start:]` (a chain: each extends the one before) with this expiry.

        Walks from the end and stops at the first entry already held with an expiry no more
        than `slack` seconds earlier: the entries before it were refreshed with it (a prefix is
        written whenever its extensions are), so a long prompt reused every step costs its new
        blocks only. Eviction is first in, first out."""
        blocks = self._engines.setdefault(engine, {})
        stale = expires_at - slack
        get = blocks.get
        first = start
        for i in range(len(hashes) - 1, start - 1, -1):
            if get(hashes[i], -math.inf) >= stale:
                first = i + 1
                break
        for h in hashes[first:]:
            blocks[h] = expires_at
        if len(blocks) > self.capacity_blocks:
            # The oldest go in a batch, down to 15/16 of the capacity: a dict finds its first
            # entry by scanning past those deleted at its front, so evicting one block at a time
            # from a full cache costs a scan per block (tens of microseconds at a million).
            excess = len(blocks) - self.capacity_blocks + self.capacity_blocks // 16
            for old in list(itertools.islice(blocks, excess)):
                del blocks[old]


@attrs.define
class Prefill:
    prompt_tokens: int
    cached_tokens: int
    seconds: float  # time to first token plus prefill, as the profile declares it


def cache_hit(
    ctx: Context, engine: str, cache: PrefixCache, options: CacheOptions, now: float
) -> int:
    """Look the prompt up and write what the request writes; returns the cached tokens."""
    prompt = ctx.token_count
    breakpoints = ctx.breakpoints
    if not breakpoints and (not options.implicit or not ctx.block_hashes):
        return 0  # nothing to look up or write (no breakpoint, and no whole block or none asked)
    hit = cache.lookup(engine, ctx.block_hashes, now) * BLOCK
    for position, _ in reversed(breakpoints[-MAX_BREAKPOINTS_READ:]):
        if position <= hit:
            break
        if position <= prompt and cache.holds(engine, ctx.prefix_hash(position), now):
            hit = position
            break
    expires = now + options.ttl_s
    if options.implicit:
        cache.insert(engine, ctx.block_hashes, 0, expires, slack=options.ttl_s / 16)
    for position, ttl in breakpoints[-options.writes :]:
        if position <= prompt:
            life = CACHE_TTL_S.get(ttl or "", options.ttl_s)
            cache.insert(engine, [ctx.prefix_hash(position)], 0, now + life)
    return min(hit, prompt) if prompt >= MIN_CACHED_PROMPT else 0


async def prefill(
    ctx: Context,
    engine: str,
    cache: PrefixCache,
    profile: InferenceProfile,
    options: CacheOptions | None = None,
) -> Prefill:
    """Wait time-to-first-token plus the prefill of the tokens the engine does not hold."""
    prompt = ctx.token_count
    cached = cache_hit(ctx, engine, cache, options or CacheOptions(), trio.current_time())
    delay = profile.ttft_s + profile.prefill_seconds(prompt - cached)
    if delay > 0:
        await trio.sleep(delay)
    return Prefill(prompt_tokens=prompt, cached_tokens=cached, seconds=delay)


class Paced(Protocol):
    """How a step's tokens are released: by a profile's speed (Pacer) or as the shared engine
    decodes them (rollout.model.accel.shared.Seat)."""

    @property
    def unpaced(self) -> bool: ...

    def due(self, n: int, now: float) -> float | None: ...

    async def sleep(self, due: float) -> None: ...

    async def token(self, n: int = 1) -> None: ...


class Pacer:
    """Releases decoded tokens at `profile.decode_tps`, sleeping only to whole-ms deadlines."""

    def __init__(self, profile: InferenceProfile) -> None:
        self._tps = profile.decode_tps
        self._start = trio.current_time()
        self._n = 0

    async def token(self, n: int = 1) -> None:
        self._n += n
        if self._tps <= 0:
            return
        due = self._start + self._n / self._tps
        if due - trio.current_time() > 0.001:
            await trio.sleep_until(due)

    @property
    def unpaced(self) -> bool:
        """Tokens are released as soon as they are decoded (no declared decode speed)."""
        return self._tps <= 0

    async def sleep(self, due: float) -> None:
        await trio.sleep_until(due)

    def due(self, n: int, now: float) -> float | None:
        """Count `n` more tokens; when they may be released if that is more than a millisecond
        after `now` (sleep until then), else None (release them now)."""
        self._n += n
        if self._tps <= 0:
            return None
        due = self._start + self._n / self._tps
        return due if due - now > 0.001 else None


class Unpaced:
    """Releases every token as soon as it is decoded (a profile with no declared decode speed):
    what a Pacer of such a profile does, with nothing to keep, so one serves every step."""

    unpaced = True

    async def token(self, n: int = 1) -> None:
        del n

    def due(self, n: int, now: float) -> float | None:
        del n, now
        return None

    async def sleep(self, due: float) -> None:
        await trio.sleep_until(due)


UNPACED = Unpaced()


def pacer_of(profile: InferenceProfile) -> Paced:
    """The pacing of a step at `profile`'s decode speed."""
    return Pacer(profile) if profile.decode_tps > 0 else UNPACED


#: The text of each ASCII token seen so far, by id (a list, faster to index than a dict: at most
#: the vocabulary, about 200k entries; None where no ASCII token was seen yet).
_ASCII: list[str | None] = []


def _ascii_texts(ids: Sequence[int]) -> list[str]:
    """The texts of tokens that are all ASCII."""
    try:
        texts = list(map(_ASCII.__getitem__, ids))
    except IndexError:
        texts = [None]
    if None in texts:  # a token not seen yet: learn it
        enc = tok.encoding()
        _ASCII.extend([None] * (max(ids) + 1 - len(_ASCII)))
        for t in ids:
            if _ASCII[t] is None:
                _ASCII[t] = enc.decode_single_token_bytes(t).decode("ascii")
        texts = list(map(_ASCII.__getitem__, ids))
    return texts  # type: ignore[return-value]  # (no None is left)


#: The deltas of long texts streamed lately, beside the tokenizer's memo of their ids
#: (rollout.conversation.tokens): a script streams its answers again and again, and splitting
#: 20,000 tokens costs about a millisecond. A few entries, of bounded size; read only.
_recent_deltas: dict[str, p.Deltas] = {}


def token_deltas(text: str) -> p.Deltas:
    """`text` split at token boundaries as a model streams it, a delta per token, or several
    tokens where one character's UTF-8 spans them (shared with the recent-texts memo where it
    is kept there: read only)."""
    if len(text) < SHORT_CHARS:
        return _short_token_deltas(text)
    if len(text) < tok.RECENT_MIN_CHARS:
        return _token_deltas(text)
    deltas = _recent_deltas.pop(text, None)
    if deltas is None:
        deltas = _token_deltas(text)
        if len(deltas) > tok.RECENT_TOKENS // tok.RECENT_ENTRIES:
            return deltas
    _recent_deltas[text] = deltas  # the newest
    while len(_recent_deltas) > tok.RECENT_ENTRIES:
        del _recent_deltas[next(iter(_recent_deltas))]
    return deltas


#: Short texts (a call's arguments, a short answer) are split once and kept, the most recent
#: SHORT_ENTRIES of them (at most about 2 MB): a script streams the same ones at every run, and
#: tokenizing one costs as much as a few of a step's events.
SHORT_CHARS = 256
SHORT_ENTRIES = 1024


@functools.lru_cache(maxsize=SHORT_ENTRIES)
def _short_token_deltas(text: str) -> p.Deltas:
    """`_token_deltas` of a short text, remembered (shared: read only)."""
    return _token_deltas(text)


def _token_deltas(text: str) -> p.Deltas:
    ids = tok.encoded(text)
    clean = plain(text)  # the deltas split the text: they are plain if it is
    if text.isascii():  # every token is whole characters
        return p.Deltas(_ascii_texts(ids), plain=clean)
    enc = tok.encoding()
    texts: list[str] = []
    counts: list[int] = []
    pending = b""
    n = 0
    for piece in enc.decode_tokens_bytes(ids):
        n += 1
        if pending or not piece.isascii():  # possibly part of a multi-byte character
            pending += piece
            try:
                texts.append(pending.decode("utf-8"))
            except UnicodeDecodeError:
                continue
            counts.append(n)
            pending = b""
        else:
            texts.append(piece.decode("ascii"))
            counts.append(1)
        n = 0
    if pending:
        texts.append(pending.decode("utf-8", errors="replace"))
        counts.append(n)
    return p.Deltas(texts, counts, clean)
