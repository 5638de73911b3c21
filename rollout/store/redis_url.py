# Where a Redis store is (`RedisUrl`, parsed from `--store redis://HOST:PORT/DB[?prefix=P]`) and
# how a failed start-up check is said to a person (`reason`). Without coredis, so that a spec can
# be parsed and an error explained whether or not the `redis` extra is installed.
from __future__ import annotations

import os
import socket
from urllib.parse import parse_qs, urlsplit

import attrs

CHECK_TIMEOUT_S = 5.0  # the longest a start-up check waits for Redis to answer


@attrs.frozen
class RedisUrl:
    """A parsed `redis://HOST:PORT/DB[?prefix=P]` spec."""

    host: str
    port: int
    db: int
    prefix: str = "rollout:"

    @classmethod
    def parse(cls, spec: str) -> RedisUrl:
        """ValueError with a message for the user when `spec` is not such a URL."""
        split = urlsplit(spec)
        if split.scheme != "redis" or not split.hostname:
            raise ValueError(f"expected redis://HOST:PORT/DB, got {spec!r}")
        try:
            port = split.port or 6379
        except ValueError:
            raise ValueError(f"bad port in {spec!r}") from None
        path = split.path.strip("/") or "0"
        if not path.isascii() or not path.isdigit():
            raise ValueError(f"the database in {spec!r} must be a number, e.g. redis://host:6379/0")
        prefix = parse_qs(split.query).get("prefix", ["rollout:"])[-1]
        return cls(host=split.hostname, port=port, db=int(path), prefix=prefix)

    @property
    def where(self) -> str:
        """`Redis at HOST:PORT` (an IPv6 host in brackets), for messages."""
        return f"Redis at {f'[{self.host}]' if ':' in self.host else self.host}:{self.port}"


def bottom(exc: BaseException) -> BaseException:
    """What lies under `exc`: the first of each exception group, then each cause."""
    while True:
        if isinstance(exc, BaseExceptionGroup):
            exc = exc.exceptions[0]
        elif exc.__cause__ is not None:
            exc = exc.__cause__
        else:
            return exc


def reason(exc: BaseException) -> str:
    """An error for a person: `Connection refused`, not the path through the libraries."""
    if isinstance(exc, socket.gaierror) and exc.strerror:
        return exc.strerror
    if isinstance(exc, OSError) and exc.errno is not None and exc.errno > 0:
        return os.strerror(exc.errno)
    return str(exc) or type(exc).__name__


__all__ = ["CHECK_TIMEOUT_S", "RedisUrl", "bottom", "reason"]
