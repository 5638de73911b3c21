# The prefix cache's keys: a prompt's tokens in 128-token blocks, each block chain-hashed with
# the one before it, so equal keys mean equal prefixes.
from __future__ import annotations

from array import array

BLOCK = 128  # prefix-cache granularity, in tokens (cache hits come in 128-token steps)


def chain_hashes(tokens: array[int], hashes: list[int], blocks: int) -> list[int]:
    """`hashes` (the first blocks' chain hashes, kept by the caller) with at least the first
    `blocks` of them made: each block is chain-hashed once, when first asked for (a context
    behind a real engine asks for one for its route, the simulated model's prefix cache for
    all)."""
    done = len(hashes)
    if done < blocks:
        prev = hashes[-1] if done else 0
        view = memoryview(tokens)
        for b in range(done, blocks):
            prev = hash((prev, view[b * BLOCK : (b + 1) * BLOCK].tobytes()))
            hashes.append(prev)
    return hashes
