# Background responses with `rollout serve --workers 2 --store redis://...`: created on one
# worker, polled, streamed again from any event and cancelled from the other; a worker killed
# with SIGKILL while it runs one leaves it `failed` (`rollout_owner_lost`), as the others find.
from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import httpx2 as httpx
from _workers import Workers, worker_pid, workers

LONG = "Write a long story about otters in space."


def create(w: Workers, **body: object) -> tuple[str, str]:
    """A background create on a new connection: its id and the worker that took it."""
    with w.http() as http:
        r = http.post("/responses", json={"model": "m", "input": LONG, "background": True, **body})
        assert r.status_code == 200, r.text
        return r.json()["id"], r.headers["x-rollout-worker"]


def events(http: httpx.Client, rid: str, after: int | None = None) -> list[str]:
    params = (
        {"stream": "true"} if after is None else {"stream": "true", "starting_after": str(after)}
    )
    body = http.get(f"/responses/{rid}", params=params).text
    return [line[6:] for line in body.splitlines() if line.startswith("data: ")]


def test_polled_streamed_and_cancelled_from_another_worker(redis_url: str, tmp_path: Path) -> None:
    with workers(redis_url, tmp_path, "--profile", "65tps", "--tool-calls", "0") as w:
        rid, owner = create(w, max_output_tokens=60)
        with contextlib.closing(w.client_on(owner)) as other:
            assert other.get(f"/responses/{rid}").json()["status"] in ("queued", "in_progress")
            whole = events(other, rid)  # follows the run on the owner to its end
            assert '"response.completed"' in whole[-1]
            assert events(other, rid, after=3) == whole[4:]
        slow, owner = create(w, max_output_tokens=4000)
        with contextlib.closing(w.client_on(owner)) as other:
            time.sleep(0.3)
            cancelled = other.post(f"/responses/{slow}/cancel")
            assert cancelled.status_code == 200, cancelled.text
            assert cancelled.json()["status"] == "cancelled"
            assert other.get(f"/responses/{slow}").json()["status"] == "cancelled"


def test_a_killed_worker_leaves_its_background_response_failed(
    redis_url: str, tmp_path: Path
) -> None:
    with workers(redis_url, tmp_path, "--profile", "65tps", "--tool-calls", "0") as w:
        rid, owner = create(w, max_output_tokens=4000)
        with contextlib.closing(w.client_on(owner)) as other:
            os.kill(worker_pid(owner), signal.SIGKILL)
            deadline = time.monotonic() + 60  # its lease lapses, then a sweep ends it
            while True:
                got = other.get(f"/responses/{rid}").json()
                if got["status"] == "failed":
                    break
                assert got["status"] in ("queued", "in_progress"), got
                assert time.monotonic() < deadline, got
                time.sleep(0.2)
            assert got["error"]["code"] == "rollout_owner_lost"
