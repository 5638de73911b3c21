# Fixtures for the tests that need Redis: a `redis-server` of their own on a random loopback
# port (no persistence), started once per session when the binary exists, and a key prefix per
# test so tests never see each other's keys. Without the binary these tests are skipped with the
# reason; CI (.ci/run) installs the Debian package, so it never skips them.
from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

REDIS = shutil.which("redis-server")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="session")
def redis_port() -> Iterator[int]:
    if REDIS is None and os.environ.get("CI") == "true":
        pytest.fail("redis-server is not installed: .ci/run installs it (Debian redis-server)")
    if REDIS is None:
        pytest.skip("redis-server is not installed (apt-get install redis-server)")
    port = _free_port()
    proc = subprocess.Popen(
        [REDIS, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(500):  # until it accepts a connection (bounded, not timed)
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if proc.poll() is not None:
                    pytest.fail(f"redis-server exited with code {proc.returncode}")
                time.sleep(0.02)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def redis_url(redis_port: int) -> str:
    """A `--store` spec with a key prefix of this test's own."""
    return f"redis://127.0.0.1:{redis_port}/0?prefix=t{secrets.token_hex(4)}:"
