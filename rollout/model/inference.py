# Simulated inference: the prefix cache (which prompt tokens the engine already holds, reported
# as `cached_tokens` and not prefilled again) and the pacing of a sampling step by an
# InferenceProfile: time to first token, prefill of the uncached tokens, then decode at a set
# tokens/s. Pacing sleeps to deadlines (no drift, no per-token sleep below a millisecond).
from __future__ import annotations

import attrs
import trio

from rollout.engine.context import BLOCK, Context
from rollout.model import tokens as tok
from rollout.model.profiles import InferenceProfile

MIN_CACHED_PROMPT = 1024  # prompts shorter than this never hit the cache (as the real API)


@attrs.define
class PrefixCache:
    """Chain hashes of 128-token prompt blocks each engine has prefilled (FIFO-bounded)."""

    capacity_blocks: int = 1 << 20
    _engines: dict[str, dict[int, None]] = attrs.field(factory=dict)

    def lookup(self, engine: str, hashes: list[int]) -> int:
        """How many leading blocks of `hashes` the engine holds (binary search on the prefix)."""
        blocks = self._engines.get(engine)
        if not blocks or not hashes:
            return 0
        lo, hi = 0, len(hashes)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if hashes[mid - 1] in blocks:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def insert(self, engine: str, hashes: list[int], start: int) -> None:
        blocks = self._engines.setdefault(engine, {})
        for h in hashes[start:]:
            blocks[h] = None
        while len(blocks) > self.capacity_blocks:
            del blocks[next(iter(blocks))]


@attrs.define
class Prefill:
    prompt_tokens: int
    cached_tokens: int
    seconds: float  # time to first token plus prefill, as the profile declares it


async def prefill(
    ctx: Context, engine: str, cache: PrefixCache, profile: InferenceProfile
) -> Prefill:
    """Wait time-to-first-token plus the prefill of the tokens the engine does not hold."""
    prompt = ctx.token_count
    hit = cache.lookup(engine, ctx.block_hashes)
    cached = hit * BLOCK if prompt >= MIN_CACHED_PROMPT else 0
    cache.insert(engine, ctx.block_hashes, hit)
    delay = profile.ttft_s + profile.prefill_seconds(prompt - cached)
    if delay > 0:
        await trio.sleep(delay)
    return Prefill(prompt_tokens=prompt, cached_tokens=cached, seconds=delay)


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


def pieces(text: str) -> list[tuple[str, int]]:
    """`text` split at token boundaries as a model streams it: (delta, tokens in it).

    A delta holds one token, or several where one character's UTF-8 spans tokens.
    """
    enc = tok.encoding()
    out: list[tuple[str, int]] = []
    pending = b""
    n = 0
    for piece in enc.decode_tokens_bytes(enc.encode_ordinary(text)):
        n += 1
        if pending or not piece.isascii():  # possibly part of a multi-byte character
            pending += piece
            try:
                out.append((pending.decode("utf-8"), n))
            except UnicodeDecodeError:
                continue
            pending = b""
        else:
            out.append((piece.decode("ascii"), 1))
        n = 0
    if pending:
        out.append((pending.decode("utf-8", errors="replace"), n))
    return out
