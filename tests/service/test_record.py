# The recorder's guarantees (rollout.service.record): lines reach the file as they happen (also
# while a keep-alive HTTP client or a WebSocket is still connected), a slow disk (a write held in
# its worker thread) never makes recording wait until `max_pending` lines are queued, nothing is
# lost on close or cancellation, an unused recorder leaves no file, and a failing disk stops
# recording without breaking the connection.
from __future__ import annotations

import logging
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio
import trio.testing

from rollout.client import HttpClient, collect, connect_ws
from rollout.model.policy import ScriptedPolicy, text
from rollout.service.record import Recorder
from support.servers import serving
from support.waits import TIMEOUT, wait_for


def rows(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


async def test_each_line_is_in_the_file_when_recorded(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "conn-7-ws.jsonl"
    recorder = Recorder(path, "ws", 7)
    event = orjson.dumps({"type": "response.output_text.delta", "delta": "x" * 100})
    for k in range(1, 4):
        await recorder.event(event)
        assert len(rows(path)) == k
    await recorder.ws_frame('{"type": "response.create"}')
    await recorder.ws_frame("not json")
    await recorder.ws_frame(b"\x00\x01")
    assert len(rows(path)) == 6
    with trio.CancelScope() as scope:
        scope.cancel()
        await recorder.aclose()  # cancelled: still closes cleanly
    await recorder.event(b'{"type":"late"}')  # after close: written at once
    written = rows(path)
    assert len(written) == 7 == recorder.lines == recorder.written
    assert [r["n"] for r in written] == sorted(r["n"] for r in written)
    assert written[3]["frame"] == {"type": "response.create"}
    assert written[4]["text"] == "not json"
    assert written[5]["binary"] == "AAE="
    assert written[-1]["event"] == {"type": "late"} and written[-1]["dir"] == "out"


class HeldDisk:
    """A recorder's writes held in their worker thread until `release`: a slow disk, without
    a clock. `batches` counts the lines of each write."""

    def __init__(self, recorder: Recorder, monkeypatch: pytest.MonkeyPatch) -> None:
        self.write = recorder._write
        self.entered = trio.Event()  # a write is being held
        self.released = threading.Event()
        self.batches: list[int] = []
        monkeypatch.setattr(recorder, "_write", self._held)

    def _held(self, chunk: bytes) -> None:
        self.batches.append(chunk.count(b"\n"))
        trio.from_thread.run_sync(self.entered.set)
        self.released.wait()
        self.write(chunk)

    def release(self) -> None:
        self.released.set()


@asynccontextmanager
async def held(recorder: Recorder, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[HeldDisk]:
    disk = HeldDisk(recorder, monkeypatch)
    with trio.fail_after(30):  # a guard against a hang, not a measurement
        try:
            yield disk
        finally:
            disk.release()


def types(path: Path) -> list[str]:
    return [r["event"]["type"] for r in rows(path)]


async def test_the_writer_takes_lines_while_the_disk_is_slow(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the writer task running, recording never waits for the disk: while its first write
    is held, more lines are recorded at once, and they go in the next write, together."""
    path = tmp_path / "conn-1-ws.jsonl"
    recorder = Recorder(path, "ws", 1)
    async with trio.open_nursery() as nursery, held(recorder, monkeypatch) as disk:
        recorder.start(nursery)
        await recorder.event(b'{"type":"a"}')
        await disk.entered.wait()  # the writer holds "a" in its worker thread
        await recorder.event(b'{"type":"b"}')
        await recorder.event(b'{"type":"c"}')  # both returned with the write still held
        assert recorder.lines == 3 and recorder.written == 0 and not path.exists()
        disk.release()
        await recorder.aclose()
    assert disk.batches == [1, 2]
    assert types(path) == ["a", "b", "c"] and recorder.written == 3


async def test_past_max_pending_recording_waits_and_a_cancelled_wait_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "conn-1-ws.jsonl"
    recorder = Recorder(path, "ws", 1, max_pending=1)
    waiting = trio.CancelScope()

    async def third() -> None:
        with waiting:
            await recorder.event(b'{"type":"c"}')

    async with trio.open_nursery() as nursery, held(recorder, monkeypatch) as disk:
        recorder.start(nursery)
        await recorder.event(b'{"type":"a"}')
        await disk.entered.wait()
        await recorder.event(b'{"type":"b"}')  # one queued: within the bound
        nursery.start_soon(third)  # two queued: waits for the disk
        await trio.testing.wait_all_tasks_blocked()
        waiting.cancel()
        await trio.testing.wait_all_tasks_blocked()
        assert waiting.cancelled_caught and recorder.lines == 3
        disk.release()
        await recorder.aclose()
    assert types(path) == ["a", "b", "c"]


async def test_a_cancelled_writer_writes_what_is_queued_then_recording_writes_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "conn-1-ws.jsonl"
    recorder = Recorder(path, "ws", 1)
    async with held(recorder, monkeypatch) as disk:
        async with trio.open_nursery() as nursery:  # the server's nursery, shutting down
            recorder.start(nursery)
            await recorder.event(b'{"type":"a"}')
            await disk.entered.wait()
            await recorder.event(b'{"type":"b"}')
            nursery.cancel_scope.cancel()  # while "a" is held, "b" queued
            disk.release()
        assert types(path) == ["a", "b"]
        await recorder.event(b'{"type":"c"}')  # no writer: written before recording returns
        assert types(path) == ["a", "b", "c"]
    with trio.CancelScope() as scope:
        scope.cancel()
        await recorder.aclose()
    assert disk.batches == [1, 1, 1] and recorder.written == 3


def test_an_unused_recorder_leaves_no_file(tmp_path: Path) -> None:
    async def main() -> None:
        await Recorder(tmp_path / "conn-1-http.jsonl", "http", 1).aclose()

    trio.run(main)
    assert not any(tmp_path.iterdir())


async def test_a_failing_disk_stops_recording_not_the_connection(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "file").write_text("not a directory")
    recorder = Recorder(tmp_path / "file" / "conn-1-ws.jsonl", "ws", 1)
    with caplog.at_level(logging.ERROR, logger="rollout"):
        await recorder.event(b'{"type":"a"}')
        await recorder.event(b'{"type":"b"}')
        await recorder.aclose()
    assert recorder.failed is not None and recorder.lines == 2
    assert [r.getMessage() for r in caplog.records if "recording" in r.getMessage()] == [
        f"recording to {recorder.path} stopped: {recorder.failed}"
    ]


# -- through a server ---------------------------------------------------------------------------


@asynccontextmanager
async def recording_server(directory: Path) -> AsyncIterator[int]:
    """A server recording into `directory`; its port."""
    async with serving(ScriptedPolicy([text("Recorded at once.")]), record=directory) as server:
        yield server.port


def body(text: str) -> dict[str, Any]:
    return {"model": "m", "input": text, "store": False}


async def recorded(directory: Path, transport: str, done: Callable[[Any], bool]) -> Any:
    """The lines of the one `transport` connection as soon as `done` holds for them. Lines reach
    the file one worker-thread round trip after they happen, so this waits a moment; it fails
    (after a generous guard, not a measurement) if they only came at close."""
    found: list[Any] = []

    def arrived() -> bool:
        files = list(directory.glob(f"conn-*-{transport}.jsonl"))
        assert len(files) <= 1, files  # one connection, kept alive
        lines = rows(files[0]) if files else []
        if lines and done(lines):
            found.append(lines)
        return bool(found)

    await wait_for(arrived, timeout=2 * TIMEOUT)
    return found[0]


def ends_with(kind: str, requests: int) -> Callable[[Any], bool]:
    def done(lines: Any) -> bool:
        sent = [r for r in lines if r["dir"] == "in"]
        event = lines[-1].get("event") or {}
        return len(sent) == requests and event.get("type") == kind

    return done


async def test_a_keep_alive_clients_exchanges_are_in_the_file_while_it_is_connected(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "rec"
    async with recording_server(directory) as port:
        async with HttpClient(f"http://127.0.0.1:{port}/v1") as http:
            for k, words in enumerate(["First.", "Second."]):
                turn = await collect(http.events("/responses", {**body(words), "stream": True}), 0)
                assert turn.status == "completed"
                lines = await recorded(directory, "http", ends_with("response.completed", k + 1))
                request = [r for r in lines if r["dir"] == "in"][-1]
                assert request["path"] == "/v1/responses" and request["body"]["input"] == words
        async with connect_ws(f"ws://127.0.0.1:{port}/v1/responses") as ws:
            turn = await collect(await ws.create(body("Over a WebSocket.")), 0)
            assert turn.status == "completed"
            lines = await recorded(directory, "ws", ends_with("response.completed", 1))
            assert lines[0]["frame"]["input"] == "Over a WebSocket."


async def test_a_closed_nursery_leaves_the_recording_tasks_writing(tmp_path: Path) -> None:
    async with trio.open_nursery() as gone:
        pass
    recorder = Recorder(tmp_path / "conn-1-ws.jsonl", "ws", 1)
    assert not recorder.start(gone)
    await recorder.event(b'{"type":"a"}')  # written before it returns
    assert types(recorder.path) == ["a"]
    await recorder.aclose()
