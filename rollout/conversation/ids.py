# Identifiers for responses and items, with the prefixes the real API uses (resp_, msg_, fc_,
# call_, ws_). Random, URL-safe, never reused within a process.
from __future__ import annotations

import secrets
import threading

ID_BYTES = 24  # random bytes in an id (48 hex digits)
POOL_IDS = 256  # ids' worth of random bytes read from the OS at a time

_lock = threading.Lock()
_pool = b""
_at = 0


def new_id(prefix: str) -> str:
    """A fresh id. Its bytes come from the OS's CSPRNG (`secrets`), read for 256 ids at a
    time: a create makes several ids before its first token, and one system call each was a
    measurable part of that path."""
    global _pool, _at
    with _lock:
        if _at >= len(_pool):
            _pool, _at = secrets.token_bytes(ID_BYTES * POOL_IDS), 0
        raw = _pool[_at : _at + ID_BYTES]
        _at += ID_BYTES
    return f"{prefix}_{raw.hex()}"
