# Identifiers for responses and items, with the prefixes the real API uses (resp_, msg_, fc_,
# call_, ws_). Random, URL-safe, never reused within a process.
from __future__ import annotations

import secrets

ID_BYTES = 24  # random bytes in an id (48 hex digits)
POOL_IDS = 256  # ids' worth of random bytes read from the OS at a time

_HEX = 2 * ID_BYTES
_pool: list[str] = []  # the hex digits of ids not yet given out


def new_id(prefix: str) -> str:
    """A fresh id. Its bytes come from the OS's CSPRNG (`secrets`), read for 256 ids at a
    time and kept as their hex digits: a create makes an id for each of its input items and
    several before its first token, and one system call each was a measurable part of that
    path. Taking one is a `list.pop`, atomic under the GIL: no two threads get the same."""
    try:
        digits = _pool.pop()
    except IndexError:
        raw = secrets.token_bytes(ID_BYTES * POOL_IDS).hex()
        fresh = [raw[i : i + _HEX] for i in range(0, len(raw), _HEX)]
        digits = fresh.pop()
        _pool.extend(fresh)  # (two threads refilling at once both add fresh ids)
    return f"{prefix}_{digits}"
