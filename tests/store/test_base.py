# The stores' boundary (rollout.store.base): `open_store` picks the backend by the spec's scheme
# from BACKENDS and imports its module only then (an optional extra that is not installed is
# MissingExtra, before the import); the stores of one process connect, check and share nothing;
# and `rollout serve` reports a store it cannot open as one line and exit status 2.
from __future__ import annotations

import importlib.util
import sys
from importlib.machinery import ModuleSpec
from pathlib import Path

import pytest

from rollout.cli import main
from rollout.store import MissingExtra, Store, open_store
from rollout.store.base import BACKENDS, Backend, Extra
from rollout.store.memory import MemoryStore
from rollout.store.shared import shared_of
from rollout.store.sqlite import SqliteStore


def test_the_unknown_store_message_lists_every_backend() -> None:
    with pytest.raises(ValueError) as caught:
        open_store("postgres://x")
    usages = [repr(b.usage) for b in BACKENDS.values()]
    assert str(caught.value) == (
        f"unknown store 'postgres://x': use {', '.join(usages[:-1])} or {usages[-1]}"
    )
    assert "'memory', 'sqlite:PATH' or 'redis://HOST:PORT/DB'" in str(caught.value)


def test_a_bare_name_and_a_scheme_with_an_argument_are_told_apart() -> None:
    for bad in ("memory:x", "sqlite", "redis"):
        with pytest.raises(ValueError, match="unknown store"):
            open_store(bad)


def test_a_new_backend_is_one_row(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(BACKENDS, "scratch", Backend("rollout.store.memory", "scratch", False))
    assert isinstance(open_store("scratch"), MemoryStore)
    with pytest.raises(ValueError, match="'scratch'"):
        open_store("scratch:x")


def test_a_missing_extra_is_said_before_the_module_is_imported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    row = Backend("rollout.store.no_such_module", "later://X", extra=Extra("later", "no_such_pkg"))
    monkeypatch.setitem(BACKENDS, "later", row)
    with pytest.raises(MissingExtra, match=r"^needs pip install 'rollout\[later\]'$"):
        open_store("later://x")
    assert "rollout.store.no_such_module" not in sys.modules


def _without_coredis(monkeypatch: pytest.MonkeyPatch) -> None:
    find_spec = importlib.util.find_spec

    def find(name: str, package: str | None = None) -> ModuleSpec | None:
        return None if name == "coredis" else find_spec(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find)


def test_redis_without_coredis_is_missing_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    _without_coredis(monkeypatch)
    with pytest.raises(MissingExtra) as caught:
        open_store("redis://127.0.0.1:1/0")
    assert str(caught.value) == "needs pip install 'rollout[redis]'"
    assert caught.value.extra == "redis"


def test_serve_says_which_extra_a_store_needs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _without_coredis(monkeypatch)
    assert main(["serve", "--store", "redis://127.0.0.1:1/0"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        "rollout: --store redis://127.0.0.1:1/0: needs pip install 'rollout[redis]'"
    ]


def test_serve_refuses_a_store_it_cannot_open(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    not_a_db = tmp_path / "not.sqlite"
    not_a_db.write_bytes(b"this is not a database, just some bytes " * 50)
    assert main(["serve", "--store", f"sqlite:{not_a_db}"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"rollout: --store: cannot open store 'sqlite:{not_a_db}'")


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_a_store_of_one_process_connects_checks_and_shares_nothing(
    kind: str, tmp_path: Path
) -> None:
    store: Store = open_store("memory" if kind == "memory" else f"sqlite:{tmp_path / 'db'}")
    async with store.connect(), store.connect():  # nested, as a server in a server
        assert await store.get("resp_x") is None
    await store.check()
    assert shared_of(store) is None
    await store.close()
    await store.close()  # idempotent


async def test_a_closed_sqlite_store_says_so(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "db")
    await store.close()
    with pytest.raises(RuntimeError, match="is closed"):
        await store.get("resp_x")
