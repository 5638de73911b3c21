# Identifiers for responses and items, with the prefixes the real API uses (resp_, msg_, fc_,
# call_, ws_). Random, URL-safe, never reused within a process.
from __future__ import annotations

import secrets


def new_id(prefix: str) -> str:
    return f"{prefix}_{secrets.token_hex(24)}"
