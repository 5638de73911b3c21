# Structured logs: one JSON line per HTTP request and per WebSocket connection event, on the
# `rollout.access` logger. Fields are ids, sizes, codes and timings: never request bodies or keys.
from __future__ import annotations

import logging
from typing import Any

import orjson

access = logging.getLogger("rollout.access")


def event(name: str, **fields: Any) -> None:
    if access.isEnabledFor(logging.INFO):
        access.info(orjson.dumps({"event": name, **fields}).decode())
