# What an item costs to count, remembered: its rendered text (role and text, as the chat format
# frames it) -> its prompt tokens and its safety-scan findings. Used where the model is a real
# engine (it prefills and caches the prompt itself, so rollout only counts): a history resent
# whole, or rebuilt from the store for a chained turn, is looked up, not tokenized and scanned
# again. One memo per process, least recently used first out, bounded in tokens (4 bytes each)
# and in entries; safe to use from the worker threads large inputs are prepared on. Simulated
# models never use it: there the work of every shape is what is measured.
from __future__ import annotations

import threading
from array import array
from collections.abc import Callable

MAX_TOKENS = 4 * 1024 * 1024  # all entries together: 16 MB of token ids
MAX_ENTRIES = 131_072
MIN_CHARS = 32  # shorter texts are tokenized again: a lookup would cost about as much


class ItemMemo:
    """Rendered text -> (tokens, findings), bounded; `findings` is None until a scan asked."""

    def __init__(self, max_tokens: int = MAX_TOKENS, max_entries: int = MAX_ENTRIES) -> None:
        self.max_tokens, self.max_entries = max_tokens, max_entries
        self._entries: dict[str, tuple[array[int], int | None]] = {}
        self._tokens = 0
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def tokens(self) -> int:
        return self._tokens

    def tokens_of(self, text: str, count: Callable[[], array[int]]) -> array[int]:
        """The tokens of the item rendered as `text`; `count` makes them on a miss. Read only."""
        if len(text) < MIN_CHARS:
            return count()
        with self._lock:
            entry = self._entries.pop(text, None)
            if entry is not None:
                self._entries[text] = entry  # now the newest
                self.hits += 1
                return entry[0]
            self.misses += 1
        tokens = count()
        self._put(text, (tokens, None))
        return tokens

    def findings_of(self, text: str, scan: Callable[[str], int]) -> int:
        """The scan findings of `text` (the tokens of it must have been asked first)."""
        with self._lock:
            entry = self._entries.get(text)
        if entry is not None and entry[1] is not None:
            return entry[1]
        found = scan(text)
        if entry is not None:
            with self._lock:
                if text in self._entries:
                    self._entries[text] = (entry[0], found)
        return found

    def _put(self, text: str, entry: tuple[array[int], int | None]) -> None:
        size = len(entry[0])
        if size > self.max_tokens // 8:  # one entry never pushes out most of the others
            return
        with self._lock:
            if text in self._entries:
                return
            self._entries[text] = entry
            self._tokens += size
            while len(self._entries) > self.max_entries or self._tokens > self.max_tokens:
                oldest = next(iter(self._entries))
                self._tokens -= len(self._entries.pop(oldest)[0])

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._tokens = 0


MEMO = ItemMemo()
