# What a stop does to a background response that is still running, in `rollout serve` as users
# run it: after `kill -9` of a server with a durable store, the restarted server reports it
# `failed` with a clear error (it cannot be resumed); after a graceful stop (SIGTERM) it ends
# `failed` too, and either way every response that ended before stays as it was. With many
# workers (Redis), the same: tests/e2e/cluster/test_background_workers.py.
from __future__ import annotations

import signal
import time
from pathlib import Path

import httpx2 as httpx
from openai import OpenAI

from rollout.store.base import STOPPED
from support.processes import finish, serve_process

LONG = "Write a long story about otters in space."


def sdk(base_url: str) -> OpenAI:
    return OpenAI(api_key="t", base_url=base_url, max_retries=0, timeout=30)


def start_two(client: OpenAI) -> tuple[str, str]:
    """One background response that ends, one that is still running."""
    done = client.responses.create(model="m", input="hi", background=True, max_output_tokens=64)
    deadline = time.monotonic() + 30
    while client.responses.retrieve(done.id).status in ("queued", "in_progress"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    running = client.responses.create(
        model="m", input=LONG, background=True, max_output_tokens=4000
    )
    assert client.responses.retrieve(running.id).status in ("queued", "in_progress")
    return done.id, running.id


def test_kill_9_then_restart_reports_the_running_one_failed(tmp_path: Path) -> None:
    args = ("--store", f"sqlite:{tmp_path / 'rollout.db'}", "--profile", "65tps")
    with serve_process(*args, "--tool-calls", "0") as served:
        done, running = start_two(sdk(served.base_url))
        served.proc.send_signal(signal.SIGKILL)
        served.proc.wait()
    with serve_process(*args) as served:
        client = sdk(served.base_url)
        assert client.responses.retrieve(done).status in ("completed", "incomplete")
        failed = client.responses.retrieve(running)
        assert failed.status == "failed"
        assert failed.error is not None and failed.error.message == STOPPED
        with httpx.Client(base_url=served.base_url) as http:
            body = http.get(f"/responses/{running}", params={"stream": "true"}).text
        assert body.rstrip().splitlines()[-2] == "event: response.failed"


def test_a_graceful_stop_ends_it_failed(tmp_path: Path) -> None:
    args = ("--store", f"sqlite:{tmp_path / 'rollout.db'}", "--profile", "65tps")
    with serve_process(*args, "--tool-calls", "0", "--shutdown-grace", "0.2") as served:
        done, running = start_two(sdk(served.base_url))
        finish(served.proc, signal.SIGTERM)
        assert served.proc.returncode == 0
    with serve_process(*args) as served:
        client = sdk(served.base_url)
        assert client.responses.retrieve(done).status in ("completed", "incomplete")
        failed = client.responses.retrieve(running)
        assert failed.status == "failed"
        assert failed.error is not None and failed.error.code == "server_error"
