# The response stores: MemoryStore (store/memory.py, the default), SqliteStore and
# `open_store(spec)` (store/sqlite.py), RedisStore (store/redis.py). The Redis store needs
# coredis, which only the `redis` extra installs: store/redis.py is imported only when a
# `redis://` store is asked for, and MissingExtra says how to install it when it is absent.
from __future__ import annotations

import importlib.util


class MissingExtra(ValueError):
    """What was asked for needs an optional extra that is not installed; `str()` says how to
    install it (`needs pip install 'rollout[redis]'`)."""

    def __init__(self, extra: str) -> None:
        super().__init__(f"needs pip install 'rollout[{extra}]'")
        self.extra = extra


def require_redis() -> None:
    """MissingExtra("redis") unless coredis (the `redis` extra) is installed."""
    if importlib.util.find_spec("coredis") is None:
        raise MissingExtra("redis")


__all__ = ["MissingExtra", "require_redis"]
