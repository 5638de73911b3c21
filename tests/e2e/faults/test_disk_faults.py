# A failing disk under `rollout serve --store sqlite:PATH`, as users run it, with the official
# SDK as the client: the file lives on a small file system the test mounts (root only; skipped
# otherwise). A full disk (an 8 MiB tmpfs, filled): a JSON create is a 503 `store_unavailable`
# the SDK raises, a stream (SSE, WebSocket) ends with `response.failed` carrying that error and
# the WebSocket stays usable, a background response ends `failed`; nothing unstored is
# retrievable, nothing stored is lost, and once space returns stores work again. A disk that
# fails outright (ext4 shut down: every I/O is EIO) is a 500 `server_error`. The server never
# dies of it (no SIGBUS: no -shm file is mapped; one truncated under it changes nothing) and
# logs one line a failure, never a traceback.
from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from openai import OpenAI

from support.errors import assert_envelope
from support.processes import ROOT, ServeProcess, cli, project_env, serve_process

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="mounting a small file system for the store needs root"
)

EXT4_IOC_SHUTDOWN = 0x8004587D  # _IOR('X', 125, __u32)
EXT4_GOING_FLAGS_NOLOGFLUSH = 2
LONG = "Write a long story about otters in space."


def mount(target: Path, *args: str) -> None:
    target.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", *args, str(target)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a file system for the store: {done.stderr.strip()}")


def umount(target: Path) -> None:
    if subprocess.run(["umount", str(target)], capture_output=True).returncode != 0:
        subprocess.run(["umount", "-l", str(target)], capture_output=True)


@contextlib.contextmanager
def tmpfs(where: Path, size: str = "8m") -> Iterator[Path]:
    mount(where, "-t", "tmpfs", "-o", f"size={size}", "tmpfs")
    try:
        yield where
    finally:
        umount(where)


@contextlib.contextmanager
def ext4(tmp_path: Path) -> Iterator[Path]:
    if shutil.which("mkfs.ext4") is None:
        pytest.skip("mkfs.ext4 is not installed")
    image = tmp_path / "ext4.img"
    with image.open("wb") as f:
        f.truncate(32 * 1024 * 1024)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True, capture_output=True)
    where = tmp_path / "ext4"
    mount(where, "-o", "loop", str(image))
    try:
        yield where
    finally:
        umount(where)


def fill(disk: Path) -> Path:
    """Fill `disk` to its last byte with one file (returned: delete it to free the space)."""
    ballast = disk / "ballast"
    fd = os.open(ballast, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for size in (1 << 20, 1 << 16, 1 << 12, 1 << 9, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
        with pytest.raises(OSError) as full:
            os.write(fd, b"\0")
        assert full.value.errno == errno.ENOSPC
    finally:
        os.close(fd)
    return ballast


def shut_down(disk: Path) -> None:
    """Every later I/O on the ext4 file system `disk` fails with EIO (a dead disk)."""
    fd = os.open(disk, os.O_RDONLY)
    try:
        fcntl.ioctl(fd, EXT4_IOC_SHUTDOWN, EXT4_GOING_FLAGS_NOLOGFLUSH.to_bytes(4, "little"))
    finally:
        os.close(fd)


@contextlib.contextmanager
def serve(db: Path, log: Path, *extra: str) -> Iterator[ServeProcess]:
    with serve_process("--store", f"sqlite:{db}", "--log-level", "WARNING", *extra, log=log) as s:
        yield s
        assert s.proc.poll() is None, f"the server died ({s.proc.returncode}): {log.read_text()}"


def sdk(served: ServeProcess) -> OpenAI:
    return OpenAI(api_key="t", base_url=served.base_url, max_retries=0, timeout=60)


def streamed(client: OpenAI, **body: Any) -> list[Any]:
    return list(client.responses.create(model="m", stream=True, **body))


def over_websocket(conn: Any, **body: Any) -> list[Any]:
    """The events of one create on an open WebSocket connection, to its terminal event."""
    conn.response.create(model="m", **body)
    events = []
    for event in conn:
        events.append(event)
        if event.type in ("response.completed", "response.incomplete", "response.failed"):
            return events
    raise AssertionError(f"the connection ended after {[e.type for e in events]}")


def assert_failed_stream(events: list[Any], code: str, *words: str) -> Any:
    """A stream that reached its end: an `error` event, then `response.failed` with that error
    (the output before it intact); returns the failed response."""
    assert [e.type for e in events][-2:] == ["error", "response.failed"], [e.type for e in events]
    error = events[-2]  # (SSE: the fields at its top; WebSocket: under `error`)
    assert (error.error.code if hasattr(error, "error") else error.code) == code
    failed = events[-1].response
    assert failed.status == "failed" and failed.error is not None
    assert failed.error.code == code
    assert all(w in failed.error.message for w in words), failed.error.message
    return failed


def assert_store_error(exc: openai.APIStatusError, status: int, code: str) -> dict[str, Any]:
    """The SDK's exception for a store's failure: the status, the standard error envelope with
    type `server_error` and `code`; returns the error object."""
    assert exc.status_code == status and exc.code == code
    return assert_envelope(exc.response.json(), code=code, type_="server_error")


def assert_not_found(client: OpenAI, response_id: str) -> None:
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(response_id)


def settled(client: OpenAI, response_id: str) -> Any:
    deadline = time.monotonic() + 60
    while (got := client.responses.retrieve(response_id)).status in ("queued", "in_progress"):
        assert time.monotonic() < deadline, got
        time.sleep(0.05)
    return got


def assert_quiet_log(log: Path, *expected: str) -> None:
    """Failures were logged, one line each, and no traceback."""
    text = log.read_text()
    assert "Traceback" not in text, text
    for word in expected:
        assert word in text, text


def test_a_full_disk_is_an_error_on_every_transport_and_then_passes(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with tmpfs(tmp_path / "disk") as disk, serve(disk / "db.sqlite", log) as served:
        client = sdk(served)
        kept = client.responses.create(model="m", input="hi", store=True)
        assert kept.status == "completed"
        kept_stream = streamed(client, input="hello", store=True)[-1].response
        ballast = fill(disk)

        with pytest.raises(openai.InternalServerError) as caught:
            client.responses.create(model="m", input="Tell me about otters.", store=True)
        error = assert_store_error(caught.value, 503, "store_unavailable")
        assert "SQLite" in error["message"] and "full" in error["message"]
        assert caught.value.response.headers["retry-after"] == "1"

        failed = assert_failed_stream(streamed(client, input="hi", store=True), *FULL)
        assert failed.output  # what was generated is in the failed response
        assert_not_found(client, failed.id)  # not stored: not retrievable as completed

        with client.responses.connect() as conn:
            ws_failed = assert_failed_stream(over_websocket(conn, input="hi", store=True), *FULL)
            after = over_websocket(conn, input="still there?", store=False)
            assert after[-1].type == "response.completed"  # the connection is still usable
        assert_not_found(client, ws_failed.id)

        unstored = client.responses.create(model="m", input="hi", store=False)
        assert unstored.status == "completed"  # what needs no store works on

        ballast.unlink()
        again = client.responses.create(model="m", input="hi again", store=True)
        assert again.status == "completed"
        for response in (kept, kept_stream, again):
            assert client.responses.retrieve(response.id).status == "completed"
        assert sorted(p.name for p in disk.iterdir()) == ["db.sqlite", "db.sqlite-wal"]  # no -shm
    assert_quiet_log(log, "database or disk is full")
    assert log.read_text().count("database or disk is full") == 3  # a line a failed write


FULL = ("store_unavailable", "SQLite", "full")


def test_a_background_response_ends_failed_when_the_disk_fills(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with (
        tmpfs(tmp_path / "disk") as disk,
        serve(disk / "db.sqlite", log, "--profile", "65tps", "--tool-calls", "0") as served,
    ):
        client = sdk(served)
        running = client.responses.create(
            model="m", input=LONG, background=True, max_output_tokens=300
        )
        ballast = fill(disk)
        failed = settled(client, running.id)
        assert failed.status == "failed" and failed.error is not None
        assert failed.error.code == "store_unavailable" and "full" in failed.error.message
        with pytest.raises(openai.InternalServerError) as caught:  # no room to start one
            client.responses.create(model="m", input="hi", background=True)
        assert_store_error(caught.value, 503, "store_unavailable")
        ballast.unlink()
        assert settled(client, running.id).status == "failed"  # (its record, settled now)
    assert_quiet_log(log, "database or disk is full")


def test_a_dead_disk_is_a_server_error_and_no_signal(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with ext4(tmp_path) as disk, serve(disk / "db.sqlite", log) as served:
        client = sdk(served)
        kept = client.responses.create(model="m", input="hi", store=True)
        shut_down(disk)
        for _ in range(3):  # each one fails the same way; the server stays up
            with pytest.raises(openai.InternalServerError) as caught:
                client.responses.create(model="m", input="hi", store=True)
            error = assert_store_error(caught.value, 500, "server_error")
            assert error["message"].startswith("The response store (SQLite) failed:")
        failed = streamed(client, input="hi", store=True)
        assert_failed_stream(failed, "server_error", "SQLite")
        with client.responses.connect() as conn:
            assert_failed_stream(over_websocket(conn, input="hi", store=True), "server_error")
            assert over_websocket(conn, input="hi", store=False)[-1].type == "response.completed"
        with pytest.raises(openai.InternalServerError):  # a read of a dead disk: an error too
            client.responses.retrieve(kept.id)
        assert client.responses.create(model="m", input="hi", store=False).status == "completed"
        assert not (disk / "db.sqlite-shm").exists()  # the WAL index is in memory
    assert served.proc.returncode not in (-7, 135)  # (SIGBUS)
    assert_quiet_log(log, "disk I/O error")


def test_a_truncated_shm_file_cannot_kill_the_server(tmp_path: Path) -> None:
    """SQLite in WAL mode maps `-shm`; a mapped page that is gone is SIGBUS. This store keeps
    its WAL index in memory: a `-shm` file beside it (stale, or made now) is not its own."""
    log = tmp_path / "server.log"
    with tmpfs(tmp_path / "disk") as disk, serve(disk / "db.sqlite", log) as served:
        client = sdk(served)
        first = client.responses.create(model="m", input="hi", store=True)
        shm = disk / "db.sqlite-shm"
        if not shm.exists():  # (it is not this store's: none exists)
            shm.write_bytes(b"\xff" * 32768)
        os.truncate(shm, 0)
        second = client.responses.create(
            model="m", input="hi", store=True, previous_response_id=first.id
        )
        assert client.responses.retrieve(second.id).status == "completed"
    assert_quiet_log(log)


def test_a_read_only_file_system_refuses_at_start(tmp_path: Path) -> None:
    """The file cannot be made read-only under a running server (a read-only remount is
    refused, EBUSY, while the server holds the files open for writing); on one that is
    read-only before it starts, `rollout serve` refuses with a message (exit 2), no signal."""
    with tmpfs(tmp_path / "disk") as disk:
        with serve(disk / "db.sqlite", tmp_path / "first.log") as served:
            assert sdk(served).responses.create(model="m", input="hi", store=True)
            busy = subprocess.run(["mount", "-o", "remount,ro", str(disk)], capture_output=True)
            assert busy.returncode != 0  # (busy: the store's files are open for writing)
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        done = subprocess.run(
            cli("serve", "--store", f"sqlite:{disk / 'db.sqlite'}", "--port", "0"),
            cwd=ROOT,
            env=project_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2, done.stderr
        assert "cannot open store" in done.stderr and "Traceback" not in done.stderr, done.stderr
