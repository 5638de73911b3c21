# The shared engine's KV memory (rollout.model.accel.kv): two prompts with a common prefix share
# its chunks (referenced twice, counted once), unreferenced KV is evicted in LRU order (a
# holding's tail before its chunks, its last chunk first), a holding knows whether it is still
# resident, and `need` is exactly what `acquire` and `grow` take from `available`.
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rollout.model.accel.kv import CHUNK, Holding, KVMemory, OutOfBlocks
from support.accel import chain

PER_CHUNK = CHUNK // 16  # blocks of 16 tokens in a chunk


def test_prefix_is_shared_and_counted_once() -> None:
    mem = KVMemory(capacity=100)
    a = chain([1, 2, 3])
    b = chain([1, 2, 4])  # the same first two chunks, then another
    assert a[:2] == b[:2] and a[2] != b[2]
    mem.acquire(a)
    assert mem.hit(b) == 2
    assert mem.need(b, tail=0) == PER_CHUNK  # only the chunk it does not share
    mem.acquire(b)
    assert mem.refs[a[0]] == mem.refs[a[1]] == 2
    assert mem.refs[a[2]] == mem.refs[b[2]] == 1
    assert mem.used == 4 * PER_CHUNK  # not 6
    mem.check()
    # One of them goes: the shared chunks stay referenced, its own becomes evictable.
    mem.release(a)
    assert mem.refs[a[0]] == 1 and mem.refs[a[2]] == 0
    assert mem.lru_blocks == PER_CHUNK and mem.available == 100 - 3 * PER_CHUNK
    mem.check()


def test_hit_counts_leading_resident_chunks_only() -> None:
    mem = KVMemory(capacity=100)
    mem.acquire(chain([1, 2]))
    assert mem.hit(chain([1, 2, 3])) == 2
    assert mem.hit(chain([9, 2])) == 0  # (a chain hash names the whole prefix)
    mem.release(chain([1, 2]))
    assert mem.hit(chain([1, 2, 3])) == 2  # evictable chunks still hit


def held(mem: KVMemory, hashes: list[int], tail: int, tokens: int) -> Holding:
    """A stopped sequence's KV: its chunks referenced, `tail` private blocks."""
    mem.acquire(hashes)
    mem.grow(tail)
    return Holding("r", list(hashes), tail, tokens, prompt=tokens)


def test_eviction_takes_the_tail_first_then_the_last_chunk() -> None:
    mem = KVMemory(capacity=4 * PER_CHUNK)
    hashes = chain([1, 2, 3])
    h = held(mem, hashes, tail=2, tokens=3 * CHUNK + 20)
    assert mem.free == PER_CHUNK - 2
    mem.make_evictable(h, now=1.0)
    assert h.state == "evictable" and mem.still_held(h)
    assert list(mem.lru) == [("t", h.key), ("c", hashes[2]), ("c", hashes[1]), ("c", hashes[0])]
    assert mem.available == mem.capacity
    mem.check()

    mem.grow(PER_CHUNK)  # the free blocks and the tail
    assert mem.evicted_blocks == 2 and h.tail == 0 and not h.intact
    assert not mem.still_held(h)
    assert mem.hit(hashes) == 3  # its chunks are still cached
    mem.grow(1)  # one more block: the last chunk goes, not the first
    assert mem.hit(hashes) == 2 and hashes[2] not in mem.refs
    mem.grow(PER_CHUNK)
    assert mem.hit(hashes) == 1
    assert mem.evicted_blocks == 2 + 2 * PER_CHUNK
    mem.check()
    assert mem.available == mem.free + PER_CHUNK  # the first chunk is still evictable
    with pytest.raises(OutOfBlocks):
        mem.grow(mem.available + 1)


def test_lru_order_is_release_order() -> None:
    mem = KVMemory(capacity=3 * PER_CHUNK)
    old, new = chain([1]), chain([2])
    mem.acquire(old)
    mem.acquire(new)
    mem.release(old)
    mem.release(new)
    mem.acquire(chain([3]))
    mem.acquire(chain([4]))  # room for one more chunk: the older release goes
    assert old[0] not in mem.refs and new[0] in mem.refs
    mem.acquire(new)  # referenced again: leaves the LRU
    assert mem.lru_blocks == 0
    with pytest.raises(OutOfBlocks):
        mem.acquire(chain([5]))


def test_a_chunk_evicted_elsewhere_means_the_holding_is_lost() -> None:
    mem = KVMemory(capacity=2 * PER_CHUNK)
    h = held(mem, chain([1, 2]), tail=0, tokens=2 * CHUNK)
    mem.make_evictable(h, now=0.0)
    mem.grow(1)  # the last chunk goes
    assert h.intact  # (it had no tail: nothing of its own was evicted yet)
    assert not mem.still_held(h) and not h.intact


def test_pinned_holding_is_not_evictable() -> None:
    mem = KVMemory(capacity=2 * PER_CHUNK)
    h = held(mem, chain([1]), tail=PER_CHUNK, tokens=2 * CHUNK)
    assert h.state == "pinned" and mem.available == 0 and mem.still_held(h)
    with pytest.raises(OutOfBlocks):
        mem.grow(1)
    mem.drop(h)  # a pinned holding's references and tail go; its chunk stays cached
    assert h.state == "gone" and h.tail == 0
    assert mem.private == 0 and mem.refs == {chain([1])[0]: 0}
    assert mem.available == mem.capacity
    mem.check()


def test_drop_of_an_evictable_holding_frees_its_tail() -> None:
    mem = KVMemory(capacity=4 * PER_CHUNK)
    h = held(mem, chain([1]), tail=3, tokens=CHUNK + 40)
    mem.make_evictable(h, now=0.0)
    mem.drop(h)
    assert mem.private == 0 and mem.lru_blocks == PER_CHUNK and mem.tails == {}
    mem.check()


def test_block_size_must_divide_the_chunk() -> None:
    with pytest.raises(ValueError, match="must divide"):
        KVMemory(capacity=10, block_size=48)


# A pool in some state: chunks referenced (by a prefix of a few chains), chunks released to the
# LRU, evictable tails; then a request's chunks and tail. `need` must be what it takes.
LABELS = st.lists(st.integers(0, 5), min_size=0, max_size=6)


@settings(max_examples=150, deadline=None)
@given(
    held_chains=st.lists(st.tuples(LABELS, st.integers(0, 9), st.booleans()), max_size=5),
    request=LABELS,
    tail=st.integers(0, 12),
    capacity=st.integers(4 * PER_CHUNK, 40 * PER_CHUNK),
)
def test_need_is_what_acquire_and_grow_take(
    held_chains: list[tuple[list[int], int, bool]],
    request: list[int],
    tail: int,
    capacity: int,
) -> None:
    mem = KVMemory(capacity=capacity)
    for labels, tail_blocks, evictable in held_chains:
        hashes = chain(labels)
        if mem.need(hashes, tail_blocks) > mem.available:
            continue
        h = held(mem, hashes, tail_blocks, len(hashes) * CHUNK + tail_blocks * 16)
        if evictable:
            mem.make_evictable(h, now=0.0)
        mem.check()
    hashes = chain(request)
    need = mem.need(hashes, tail)
    assert need == mem.chunk_need(hashes) + tail
    before = mem.available
    if need > before:
        with pytest.raises(OutOfBlocks):
            mem.acquire(hashes)
            mem.grow(tail)
        return
    mem.acquire(hashes)
    mem.grow(tail)
    assert before - mem.available == need
    assert all(mem.refs[h] >= 1 for h in hashes)
    mem.check()
