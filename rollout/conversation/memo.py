# What an item costs to count, remembered: what its prompt tokens are made of (its role, as the
# chat format frames it, and its text) -> its prompt tokens and its safety-scan findings. Used
# where the model is a real engine (it prefills and caches the prompt itself, so rollout only
# counts): a history resent whole, or rebuilt from the store for a chained turn, is looked up,
# not tokenized and scanned again, and so is a request's header (its instructions, a system
# message, and its tools, a `tools` one: the same every first turn of an agent). A key is the
# item's own text (a string decoded once per request, whose hash is then kept with it), not its
# rendered form, which would be built anew each time. One memo per process, least recently
# used first out, bounded in tokens (4 bytes each) and in entries; safe to use from the worker
# threads large inputs are prepared on; a context looks up all of a request's items under one
# lock. Simulated models never use it: there the work of every shape is what is measured.
from __future__ import annotations

import threading
from array import array
from collections.abc import Sequence

MAX_TOKENS = 4 * 1024 * 1024  # all entries together: 16 MB of token ids
MAX_ENTRIES = 131_072
MIN_CHARS = 32  # shorter texts are tokenized again: a lookup would cost about as much

Key = tuple[str, str]  # an item's role (the chat format's header) and its text
#: An item's tokens and its scan findings (None until a scan asked for them).
Entry = tuple["array[int]", int | None]


class ItemMemo:
    """(role, text) -> (tokens, findings), bounded."""

    def __init__(self, max_tokens: int = MAX_TOKENS, max_entries: int = MAX_ENTRIES) -> None:
        self.max_tokens, self.max_entries = max_tokens, max_entries
        self._entries: dict[Key, Entry] = {}
        self._tokens = 0
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def tokens(self) -> int:
        return self._tokens

    def lookup(self, keys: Sequence[Key | None]) -> list[Entry | None]:
        """The entry of each key (None: not kept, or no key), each one found made the newest.
        Keys of short texts are never kept, and count as neither hit nor miss."""
        out: list[Entry | None] = []
        add = out.append
        with self._lock:
            entries = self._entries
            for key in keys:
                if key is None or len(key[1]) < MIN_CHARS:
                    add(None)
                    continue
                entry = entries.pop(key, None)
                if entry is None:
                    self.misses += 1
                else:
                    entries[key] = entry  # now the newest
                    self.hits += 1
                add(entry)
        return out

    def put(self, key: Key, entry: Entry) -> None:
        """Keep what counting `key` made (a short text, or an entry over an eighth of the
        bound, is not kept; one already kept is replaced only to add its findings)."""
        size = len(entry[0])
        if len(key[1]) < MIN_CHARS or size > self.max_tokens // 8:
            return  # (one entry never pushes out most of the others)
        with self._lock:
            old = self._entries.get(key)
            if old is not None:
                if old[1] is None and entry[1] is not None:
                    self._entries[key] = (old[0], entry[1])
                return
            self._entries[key] = entry
            self._tokens += size
            while len(self._entries) > self.max_entries or self._tokens > self.max_tokens:
                oldest = next(iter(self._entries))
                self._tokens -= len(self._entries.pop(oldest)[0])

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._tokens = 0


MEMO = ItemMemo()
