# The response stores, behind one boundary (store/base.py): the `Store` protocol and
# `open_store(spec)`, which picks the backend by the spec's scheme: MemoryStore (store/memory.py,
# the default), SqliteStore (store/sqlite.py), RedisStore (store/redis.py, which needs coredis,
# the `redis` extra: it is imported only when a `redis://` store is asked for, and MissingExtra
# says how to install it when it is absent). `SharedStore` (store/shared.py) is what the cluster
# layer needs of a store many workers share.
from __future__ import annotations

from rollout.store.base import (
    MissingExtra,
    Store,
    StoredResponse,
    StoreUnreachable,
    open_store,
    require_redis,
)

__all__ = [
    "MissingExtra",
    "Store",
    "StoreUnreachable",
    "StoredResponse",
    "open_store",
    "require_redis",
]
