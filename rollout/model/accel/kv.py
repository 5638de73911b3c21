# The shared engine's KV memory, sans-IO (times are passed in): a pool of blocks of
# `block_size` tokens holding one prefix cache. A sequence's KV is a run of full CHUNK-token
# chunks, named by the chain hash of their tokens (the Context's block hashes, so two prompts
# with the same prefix share those chunks, reference-counted), and a private tail of blocks (the
# prompt's last partial chunk and what it decoded). A chunk nobody references stays cached,
# evictable in least-recently-used order, as vLLM's freed blocks do.
#
# When a sequence stops (a rollout paused on a tool call, or a finished chained turn) its KV
# becomes a Holding: `pinned` (never evicted: the `pin` and `ttl` policies, until the time-to-
# live), or `evictable` (its tail and chunks join the LRU, tail first: `evict`). A holding claimed
# by the rollout's next request is credited with what it still holds when that request is
# admitted; what was lost is prefilled again and counted as recomputed.
from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from typing import Literal

import attrs

from rollout.conversation.blocks import BLOCK

CHUNK = BLOCK  # prefix-cache granularity, in tokens (the Context's block hashes)

State = Literal["pinned", "evictable", "gone"]
_ids = itertools.count()


@attrs.define(eq=False)
class Holding:
    """The KV a stopped sequence left: its chunks (referenced) and its private tail."""

    owner: Hashable
    chunks: list[int]
    tail: int  # private blocks
    tokens: int  # tokens of KV held (prompt and output)
    prompt: int = 0  # of them, the prompt's (what a next prompt that extends it can reuse)
    state: State = "pinned"
    since: float = 0.0  # when the sequence stopped
    until: float = float("inf")  # a pin's end (the `ttl` policy)
    intact: bool = True  # nothing of it was evicted
    host_tokens: int = 0  # tokens copied to host memory (`offload`)
    program: float = 0.0  # its rollout's first arrival
    key: int = attrs.field(factory=lambda: next(_ids))


class OutOfBlocks(Exception):
    """An allocation the pool cannot satisfy (the caller checks `available` first)."""


@attrs.define(eq=False)
class KVMemory:
    capacity: int  # blocks
    block_size: int = 16
    refs: dict[int, int] = attrs.field(factory=dict)  # resident chunk -> references
    # Evictable entries, oldest first: ("c", hash) a chunk, ("t", holding key) a holding's tail.
    lru: OrderedDict[tuple[str, int], int] = attrs.field(factory=OrderedDict)
    lru_blocks: int = 0
    private: int = 0  # private blocks of running sequences and holdings
    tails: dict[int, Holding] = attrs.field(factory=dict)  # holdings with a tail in the LRU
    evicted_blocks: int = 0
    epoch: int = 0  # bumped whenever the set of chunks or their references change

    def __attrs_post_init__(self) -> None:
        if CHUNK % self.block_size:
            raise ValueError(f"block size {self.block_size} must divide {CHUNK}")

    @property
    def per_chunk(self) -> int:
        return CHUNK // self.block_size

    @property
    def used(self) -> int:
        """Blocks holding KV, evictable ones included."""
        return len(self.refs) * self.per_chunk + self.private

    @property
    def active(self) -> int:
        """Blocks of running sequences and pinned holdings (not the evictable cache): what
        vLLM reports as KV cache usage."""
        return self.used - self.lru_blocks

    @property
    def free(self) -> int:
        return self.capacity - self.used

    @property
    def available(self) -> int:
        """Blocks an allocation can have: free ones and evictable ones."""
        return self.free + self.lru_blocks

    def blocks(self, tokens: int) -> int:
        return -(-tokens // self.block_size)

    def tail_blocks(self, tokens: int, chunks: int) -> int:
        """Private blocks of a sequence of `tokens` whose first `chunks` chunks are shared."""
        return self.blocks(max(0, tokens - chunks * CHUNK))

    # -- the prefix cache -----------------------------------------------------------------------

    def hit(self, hashes: Sequence[int]) -> int:
        """Leading chunks of `hashes` resident (referenced or evictable)."""
        n = 0
        for h in hashes:
            if h not in self.refs:
                break
            n += 1
        return n

    def acquire(self, hashes: Sequence[int]) -> None:
        """Reference every chunk of `hashes`, allocating those not resident (the caller made
        sure `available` suffices: `need`)."""
        self.epoch += 1
        for h in hashes:
            n = self.refs.get(h)
            if n is None:
                self._make_room(self.per_chunk)
                self.refs[h] = 1
            else:
                if n == 0:
                    self.lru_blocks -= self.lru.pop(("c", h))
                self.refs[h] = n + 1

    def release(self, hashes: Sequence[int]) -> None:
        """Drop a reference to each chunk; unreferenced ones become evictable, the last chunk
        first (a sequence's end is evicted before its start, as vLLM does)."""
        self.epoch += 1
        for h in reversed(hashes):
            n = self.refs.get(h)
            if n is None or n == 0:
                continue  # (evicted, or already released)
            self.refs[h] = n - 1
            if n == 1:
                self.lru[("c", h)] = self.per_chunk
                self.lru_blocks += self.per_chunk

    def need(self, hashes: Sequence[int], tail: int, credit_tail: int = 0) -> int:
        """Blocks `acquire(hashes)` plus a tail of `tail` blocks would take from `available`
        (an evictable chunk it references is no longer available; `credit_tail` blocks are
        given back by a holding released in the same admission)."""
        return self.chunk_need(hashes) + tail - credit_tail

    def chunk_need(self, hashes: Sequence[int]) -> int:
        """The chunks' part of `need` (unchanged while `epoch` is)."""
        refs = self.refs
        n = 0
        for h in hashes:
            r = refs.get(h)
            if r is None or r == 0:  # (missing, or evictable: both leave `available`)
                n += 1
        return n * self.per_chunk

    # -- private blocks -------------------------------------------------------------------------

    def grow(self, blocks: int) -> None:
        """Allocate `blocks` private blocks (evicting as needed; the caller checked)."""
        if blocks > 0:
            self._make_room(blocks)
            self.private += blocks

    def shrink(self, blocks: int) -> None:
        self.private -= blocks
        assert self.private >= 0

    def _make_room(self, blocks: int) -> None:
        while self.free < blocks:
            if not self.lru:
                raise OutOfBlocks(f"{blocks} blocks wanted, {self.free} free")
            (kind, key), n = self.lru.popitem(last=False)
            self.lru_blocks -= n
            self.evicted_blocks += n
            if kind == "c":
                del self.refs[key]
                self.epoch += 1
            else:
                holding = self.tails.pop(key)
                holding.intact = False
                holding.tail = 0
                self.private -= n

    # -- holdings -------------------------------------------------------------------------------

    def make_evictable(self, holding: Holding, now: float) -> None:
        """A holding's KV joins the LRU: its tail first, then its chunks from the last."""
        if holding.state == "evictable":
            return
        holding.state = "evictable"
        holding.since = min(holding.since, now)
        if holding.tail:
            self.tails[holding.key] = holding
            self.lru[("t", holding.key)] = holding.tail
            self.lru_blocks += holding.tail
        self.release(holding.chunks)

    def still_held(self, holding: Holding) -> bool:
        """Everything the holding had is still resident."""
        if holding.state == "pinned":
            return True
        if not holding.intact:
            return False
        if any(h not in self.refs for h in holding.chunks):
            holding.intact = False
        return holding.intact

    def drop(self, holding: Holding) -> None:
        """Free a holding: a pinned one's references and tail go; an evictable one's tail is
        freed (its chunks stay cached, evictable)."""
        if holding.state == "pinned":
            self.release(holding.chunks)
            self.shrink(holding.tail)
        elif holding.state == "evictable" and holding.key in self.tails:
            del self.tails[holding.key]
            self.lru_blocks -= self.lru.pop(("t", holding.key))
            self.shrink(holding.tail)
        holding.tail = 0
        holding.state = "gone"

    def check(self) -> None:
        """The pool's invariants (tests): within capacity, the LRU's count right, and exactly
        the unreferenced chunks and the evictable holdings' tails in it."""
        assert 0 <= self.used <= self.capacity, (self.used, self.capacity)
        assert self.lru_blocks == sum(self.lru.values())
        assert {h for k, h in self.lru if k == "c"} == {h for h, n in self.refs.items() if n == 0}
        assert all(n >= 0 for n in self.refs.values())
        assert {k for kind, k in self.lru if kind == "t"} == set(self.tails)
        assert all(self.lru[("t", k)] == h.tail > 0 for k, h in self.tails.items())
