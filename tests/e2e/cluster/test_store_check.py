# `rollout serve` with a Redis store that does not answer (a real closed port: bound, noted,
# closed) stops before it serves, with one line on stderr naming the URL and the reason and
# exit code 2: one process, and `--workers 4`, whose parent checks once and starts no worker
# (no traceback, no restart). `--workers N` without a Redis store is refused the same way. The
# check itself (RedisStore.check) against a real redis-server: it passes, and a database Redis
# refuses is named with Redis's reason.
from __future__ import annotations

import errno
import os
import socket
import subprocess
from pathlib import Path

import pytest

from rollout.store.redis import RedisStore, StoreUnreachable
from support.processes import cli, free_port, project_env

TIMEOUT_S = 60  # a hang guard: a loop of restarts would run until it


def closed_port() -> int:
    """A loopback port that nothing listens on (bound once, then closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def serve(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cli("serve", "--port", str(free_port()), *args),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=project_env(),
    )


@pytest.mark.parametrize("workers", [[], ["--workers", "4"]], ids=["one-process", "4-workers"])
def test_an_unreachable_store_is_one_line_and_exit_code_2(workers: list[str]) -> None:
    url = f"redis://127.0.0.1:{closed_port()}/0"
    done = serve(*workers, "--store", url)
    port = url.rsplit(":", 1)[1].split("/")[0]
    refused = os.strerror(errno.ECONNREFUSED)
    assert done.stderr.splitlines() == [
        f"rollout: --store {url}: cannot connect to Redis at 127.0.0.1:{port}: {refused}"
    ]
    assert done.returncode == 2
    assert done.stdout == ""


def test_a_wrong_setting_with_workers_is_checked_once_in_the_parent() -> None:
    # Any flag a worker would refuse is refused by the parent, before it starts one.
    url = f"redis://127.0.0.1:{closed_port()}/0"
    done = serve("--workers", "4", "--store", url, "--profile", "no-such-profile")
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert done.stderr.startswith("rollout: "), done.stderr
    assert "no-such-profile" in done.stderr
    assert done.returncode == 2


@pytest.mark.parametrize("store", ["memory", "sqlite:DB"])
def test_workers_without_a_redis_store_are_one_line(store: str, tmp_path: Path) -> None:
    store = store.replace("DB", str(tmp_path / "db"))
    done = serve("--workers", "4", "--store", store)
    assert done.stderr.splitlines() == [
        "rollout: --workers N needs a shared store: --store redis://HOST:PORT/DB "
        f"(not --store {store})"
    ]
    assert done.returncode == 2
    assert not (tmp_path / "db").exists()  # refused before the store was opened


def test_workers_must_be_at_least_one() -> None:
    done = serve("--workers", "0", "--store", "redis://127.0.0.1:1/0")
    assert done.stderr.splitlines() == ["rollout: --workers must be >= 1, not 0"]
    assert done.returncode == 2


async def test_the_check_passes_against_a_redis_that_answers(redis_url: str) -> None:
    await RedisStore(redis_url).check()


async def test_the_check_names_what_redis_refused(redis_port: int) -> None:
    with pytest.raises(StoreUnreachable) as caught:
        await RedisStore(f"redis://127.0.0.1:{redis_port}/99999").check()
    assert str(caught.value).startswith(f"Redis at 127.0.0.1:{redis_port} failed: ")
    assert "out of range" in str(caught.value)
