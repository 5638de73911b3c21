# `rollout serve --workers 2 --store redis://...` as a real process tree: every response (and
# WebSocket handshake) names its worker in x-rollout-worker; a chain whose turns land on
# different workers (a new connection per request) reads whole from every worker; a worker
# killed with SIGKILL is started again; `--workers` without a shared store is refused.
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from _workers import ROOT, worker_pid, workers


def test_a_chain_across_workers_reads_whole_from_every_worker(
    redis_url: str, tmp_path: Path
) -> None:
    with workers(redis_url, tmp_path, "--tool-calls", "0") as w:
        sdk = w.sdk()
        ids: list[str] = []
        answered: list[str] = []
        previous = None
        # Turns until two workers took part (each turn on a new connection): the chain's
        # context comes from the shared store whichever worker a turn lands on.
        for turn in range(60):
            raw = sdk.responses.with_raw_response.create(
                model="m", input=f"question {turn}", previous_response_id=previous, store=True
            )
            response = raw.parse()
            assert response.status == "completed", response
            ids.append(response.id)
            answered.append(raw.headers["x-rollout-worker"])
            previous = response.id
            if len(set(answered)) == 2 and turn >= 2:
                break
        assert len(set(answered)) == 2, answered
        with w.http() as http:
            for rid in ids:  # every response, from every worker
                got = w.until_workers(
                    lambda rid=rid: http.get(f"/responses/{rid}"),
                    lambda r: r.headers["x-rollout-worker"],
                )
                assert {r.status_code for r in got.values()} == {200}
            last = w.until_workers(
                lambda: http.get(f"/responses/{ids[-1]}/input_items", params={"order": "asc"}),
                lambda r: r.headers["x-rollout-worker"],
            )
            for r in last.values():
                assert [i["content"][0]["text"] for i in r.json()["data"]] == [
                    f"question {len(ids) - 1}"
                ]
        # The next turn sees the whole conversation (each earlier question and answer).
        final = sdk.responses.create(model="m", input="last", previous_response_id=previous)
        assert final.status == "completed"
        assert final.usage is not None and final.usage.input_tokens > 4 * len(ids)


def test_a_conversation_across_workers(redis_url: str, tmp_path: Path) -> None:
    """A conversation made on one worker takes turns on both (each on a new connection): the
    shared store holds its items, each turn sees the earlier ones and appends its own."""
    with workers(redis_url, tmp_path, "--tool-calls", "0") as w:
        sdk = w.sdk()
        conv = sdk.conversations.create(items=[{"role": "user", "content": "start"}])
        answered: list[str] = []
        inputs: list[int] = []
        for turn in range(60):  # until both workers took a turn
            raw = sdk.responses.with_raw_response.create(
                model="m", input=f"turn {turn}", conversation=conv.id
            )
            response = raw.parse()
            assert response.status == "completed" and response.conversation is not None
            assert response.usage is not None
            answered.append(raw.headers["x-rollout-worker"])
            inputs.append(response.usage.input_tokens)
            if len(set(answered)) == 2 and turn >= 2:
                break
        assert len(set(answered)) == 2, answered
        assert inputs == sorted(inputs) and len(set(inputs)) == len(inputs), inputs
        items = list(sdk.conversations.items.list(conv.id, order="asc", limit=100))
        assert len(items) == 1 + 2 * len(answered)
        assert items[-1].id == response.output[-1].id


def test_every_response_names_its_worker_and_a_killed_worker_restarts(
    redis_url: str, tmp_path: Path
) -> None:
    with workers(redis_url, tmp_path) as w, w.http() as http:
        seen = w.until_workers(
            lambda: http.get("/responses/resp_nope"), lambda r: r.headers["x-rollout-worker"]
        )
        assert all(r.status_code == 404 for r in seen.values())
        victim = sorted(seen)[0]
        os.kill(worker_pid(victim), signal.SIGKILL)
        # Two workers answer again, one of them new (another pid); the old one never does.
        after = w.until_workers(
            lambda: http.get("/responses/resp_nope"),
            lambda r: r.headers["x-rollout-worker"],
            resets=True,
        )
        assert victim not in after
        assert len(set(after) - set(seen)) == 1
        assert "exited with code -9; restarting" in w.log.read_text()


def test_websocket_handshake_names_its_worker(redis_url: str, tmp_path: Path) -> None:
    from websockets.sync.client import connect

    with workers(redis_url, tmp_path) as w, connect(f"ws://127.0.0.1:{w.port}/v1/responses") as ws:
        assert ws.response is not None
        assert ws.response.headers["x-rollout-worker"].startswith("w")


def test_workers_need_a_shared_store(tmp_path: Path) -> None:
    for store in ("memory", f"sqlite:{tmp_path / 'db'}"):
        done = subprocess.run(
            [sys.executable, "-m", "rollout.cli", "serve", "--workers", "2", "--store", store],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert done.returncode == 2
        assert "--workers N needs a shared store" in done.stderr


def test_every_completed_response_survives_kill_9_and_chains_from_every_worker(
    redis_url: str, tmp_path: Path
) -> None:
    with workers(redis_url, tmp_path, "--profile", "65tps", "--tool-calls", "0") as w:
        sdk = w.sdk()
        completed: list[str] = []
        previous = None
        for turn in range(4):  # a chain, each turn on a new connection (any worker)
            response = sdk.responses.create(
                model="m", input=f"q{turn}", previous_response_id=previous, max_output_tokens=16
            )
            assert response.status in ("completed", "incomplete")
            completed.append(response.id)
            previous = response.id
        # The next turn streams slowly: kill its worker after three deltas.
        killed = None
        with (
            w.http() as http,
            http.stream(
                "POST",
                "/responses",
                json={
                    "model": "m",
                    "input": "long",
                    "previous_response_id": previous,
                    "stream": True,
                },
            ) as r,
        ):
            victim = r.headers["x-rollout-worker"]
            deltas = 0
            for line in r.iter_lines():
                if line.startswith("data: ") and '"response.output_text.delta"' in line:
                    deltas += 1
                    if deltas == 3:
                        os.kill(worker_pid(victim), signal.SIGKILL)
                        break
                if line.startswith("data: ") and '"response.created"' in line:
                    killed = line.split('"id":"', 1)[1].split('"', 1)[0]
        assert killed is not None
        with w.http() as http:
            for rid in completed:  # every response a client saw end: from every worker
                got = w.until_workers(
                    lambda rid=rid: http.get(f"/responses/{rid}"),
                    lambda r: r.headers["x-rollout-worker"],
                    resets=True,
                )
                assert {r.status_code for r in got.values()} == {200}
            assert http.get(f"/responses/{killed}").status_code == 404  # cut: never stored
        # The chain goes on from its last completed response, on whichever worker.
        for rid in completed:
            more = sdk.responses.create(
                model="m", input="and then?", previous_response_id=rid, max_output_tokens=16
            )
            assert more.status in ("completed", "incomplete")
