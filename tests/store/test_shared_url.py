# Which `--store` specs name a store that many workers share (rollout.store.base.is_shared_url,
# by the `shared` rows of BACKENDS): `--workers N` is refused without one, and a process over one
# is a cluster of one worker. A second shared backend is one row, with no edit of the workers'
# code.
from __future__ import annotations

import argparse

import pytest

from rollout.server.workers import worker_listener, workers_problem
from rollout.store.base import BACKENDS, Backend, is_shared_url, shared_usages


def flags(store: str, workers: int = 2) -> argparse.Namespace:
    return argparse.Namespace(
        store=store, workers=workers, worker_index=None, host="127.0.0.1", port=0
    )


def test_only_a_redis_url_is_shared() -> None:
    assert is_shared_url("redis://127.0.0.1:6379/0")
    assert is_shared_url("redis://h/0?prefix=p:")
    for spec in ("memory", "sqlite:/tmp/x.db", "sqlite://x", "redis", "redis:h", "", "x://y"):
        assert not is_shared_url(spec), spec
    assert shared_usages() == ["redis://HOST:PORT/DB"]


def test_workers_need_a_shared_store() -> None:
    assert workers_problem(flags("redis://127.0.0.1:1/0")) is None
    for spec in ("memory", "sqlite:x.db", "redis:h"):
        assert workers_problem(flags(spec)) == (
            f"--workers N needs a shared store: --store redis://HOST:PORT/DB (not --store {spec})"
        )
    assert workers_problem(flags("redis://h/0", workers=0)) == "--workers must be >= 1, not 0"


def test_one_process_over_a_shared_store_is_a_worker() -> None:
    sock, worker = worker_listener(flags("redis://127.0.0.1:1/0"))
    assert sock is None and worker is not None and worker.startswith("w0.")
    assert worker_listener(flags("memory")) == (None, None)
    assert worker_listener(flags("sqlite:x.db")) == (None, None)


def test_a_second_shared_backend_is_one_row(monkeypatch: pytest.MonkeyPatch) -> None:
    row = Backend("rollout.store.memory", "kv://HOST/NAME", shared=True)
    monkeypatch.setitem(BACKENDS, "kv", row)
    assert is_shared_url("kv://h/n") and not is_shared_url("kv:n")
    assert workers_problem(flags("kv://h/n")) is None
    assert worker_listener(flags("kv://h/n"))[1] is not None
    assert workers_problem(flags("memory")) == (
        "--workers N needs a shared store: --store redis://HOST:PORT/DB or --store kv://HOST/NAME "
        "(not --store memory)"
    )
