# Ids are the prefix and 48 hex digits, never repeated, across the refills of the random pool
# and from many threads at once.
from __future__ import annotations

import re
import threading

from rollout.conversation import ids


def test_ids_are_unique_across_pool_refills_and_threads() -> None:
    made: list[list[str]] = [[] for _ in range(4)]

    def make(into: list[str]) -> None:
        into.extend(ids.new_id("msg") for _ in range(3 * ids.POOL_IDS))

    threads = [threading.Thread(target=make, args=(m,)) for m in made]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    every = [i for m in made for i in m]
    assert len(set(every)) == len(every) == 12 * ids.POOL_IDS
    assert all(re.fullmatch(r"msg_[0-9a-f]{48}", i) for i in every)
