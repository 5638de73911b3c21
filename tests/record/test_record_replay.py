# Record and replay with the official SDK: a session is recorded (HTTP chained tool rollout;
# WebSocket chained rollout plus an append rollout), the recording's model is rebuilt as a
# ScriptedPolicy, the recorded requests are replayed against a fresh server with it, and the
# events must be the same modulo ids and timestamps; with another model they must differ.
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio
from _record_helpers import (
    FINAL,
    cmd,
    http_session,
    replay,
    sdk,
    server,
    tool_script,
    ws_session,
)

from rollout.client.replay import normalize, replay_session
from rollout.model.policy import CallStep, FunctionCallSpec, ScriptedPolicy, TextStep
from rollout.model.recorded import (
    RecordedModel,
    recorded_events,
    replay_requests,
    script_from_recording,
)

TURNS = 3
ROOT = str(Path(__file__).resolve().parents[2])
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}


def check_files(directory: Path, transports: set[str]) -> list[dict[str, Any]]:
    """Every file is JSONL of recorded frames with both directions; returns all the lines."""
    files = sorted(directory.glob("conn-*.jsonl"))
    assert files, "nothing recorded"
    assert {f.stem.split("-")[2] for f in files} == transports
    lines = []
    for f in files:
        _, number, transport = f.stem.split("-")
        rows = [orjson.loads(raw) for raw in f.read_bytes().splitlines()]
        assert rows, f
        assert {r["dir"] for r in rows} == {"in", "out"}, f
        assert all(r["transport"] == transport and r["conn"] == int(number) for r in rows)
        times = [r["t"] for r in rows]
        assert times == sorted(times) and times[0] >= 0
        for r in rows:
            if transport == "ws" and r["dir"] == "in":
                assert isinstance(r["frame"], dict)
            elif transport == "ws":
                assert isinstance(r["event"], dict) and "type" in r["event"]
            elif r["dir"] == "in":
                assert {"method", "path", "body"} <= set(r)
            else:
                assert "event" in r or ("status" in r and ("body" in r or r.get("stream")))
        lines += rows
    return lines


@pytest.fixture
def http_recording(tmp_path: Path) -> Path:
    directory = tmp_path / "http"
    with server(tool_script(TURNS), directory) as s, sdk(s) as client:
        assert http_session(client) == [cmd(i) for i in range(TURNS)]
    return directory


@pytest.fixture
def ws_recording(tmp_path: Path) -> Path:
    directory = tmp_path / "ws"
    with server(tool_script(TURNS), directory) as s, sdk(s) as client:
        finals, appended = ws_session(client)
    assert finals == [FINAL, FINAL]
    assert appended == [cmd(i) for i in range(TURNS)]
    return directory


def test_http_recording_is_jsonl_of_requests_and_replies(http_recording: Path) -> None:
    lines = check_files(http_recording, {"http"})
    requests = [(r["method"], r["path"]) for r in lines if r["dir"] == "in"]
    assert requests[: TURNS + 1] == [("POST", "/v1/responses")] * (TURNS + 1)
    assert requests[-1][0] == "GET" and requests[-1][1].startswith("/v1/responses/resp_")
    out = [r for r in lines if r["dir"] == "out"]
    assert sum(1 for r in out if r.get("stream")) == 2  # turns 1 and 3 streamed
    kinds = Counter(r["event"]["type"] for r in out if "event" in r)
    assert kinds["response.created"] == 2 and kinds["response.completed"] == 2
    assert all(r["status"] == 200 for r in out if "status" in r)
    bodies = [r["body"] for r in replay_requests(http_recording)]
    assert "previous_response_id" not in bodies[0]
    assert [b["previous_response_id"].startswith("resp_") for b in bodies[1 : TURNS + 1]] == [
        True
    ] * TURNS
    assert bodies[-1] is None  # the GET


def test_ws_recording_is_jsonl_of_frames_and_events(ws_recording: Path) -> None:
    lines = check_files(ws_recording, {"ws"})
    frames = [r["frame"]["type"] for r in lines if r["dir"] == "in"]
    assert frames == ["response.create"] * (TURNS + 2) + ["response.append"] * TURNS
    events = [r["event"]["type"] for r in lines if r["dir"] == "out"]
    assert events.count("response.done") == TURNS
    assert events.count("response.completed") == TURNS + 2


@pytest.mark.parametrize("recording", ["http_recording", "ws_recording"])
def test_replay_reproduces_the_recorded_events(
    recording: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    directory: Path = request.getfixturevalue(recording)
    recorded = recorded_events(directory)
    policy = script_from_recording(directory)
    again = tmp_path / "again"
    replayed = replay(directory, policy, record=again)
    assert len(replayed) == len(recorded)
    assert normalize(replayed) == normalize(recorded)
    # Ids and timestamps did change; the normalized form hides exactly those.
    assert replayed != recorded
    # The replay's own recording is the same session again.
    assert normalize(recorded_events(again)) == normalize(recorded)


@pytest.mark.parametrize("recording", ["http_recording", "ws_recording"])
@pytest.mark.parametrize(
    "changed",
    [
        tool_script(TURNS, final="All done: two tests still fail."),  # another answer
        tool_script(TURNS, offset=1),  # other arguments
        tool_script(TURNS - 1),  # one call fewer
    ],
    ids=["answer", "arguments", "fewer-calls"],
)
def test_replay_detects_a_changed_model(
    recording: str, changed: ScriptedPolicy, request: pytest.FixtureRequest
) -> None:
    directory: Path = request.getfixturevalue(recording)
    replayed = replay(directory, changed)
    assert normalize(replayed) != normalize(recorded_events(directory))


def test_script_from_recording_rebuilds_the_steps(ws_recording: Path) -> None:
    """Both conversations of the WebSocket session (chained, append) give back the script."""
    model = script_from_recording(ws_recording).steps
    assert isinstance(model, RecordedModel)
    expected = list(tool_script(TURNS).steps)  # type: ignore[arg-type]
    assert expected[0] == CallStep(
        calls=(FunctionCallSpec(name="exec", arguments=f'{{"cmd":"{cmd(0)}"}}'),)
    )
    assert expected[-1] == TextStep(text=FINAL)
    for conversation in ("Chain it.", "Append it."):
        steps = [model.by_key[(conversation, k)] for k in range(TURNS + 1)]
        assert steps == [[step] for step in expected]
    assert set(model.by_key) == {(c, k) for c in ("Chain it.", "Append it.") for k in range(4)}


def test_cli_serves_a_recording_as_the_model_and_records(
    ws_recording: Path, tmp_path: Path
) -> None:
    """`rollout serve --script DIR --record OUT`: the recorded model answers the replayed
    requests as recorded, and the new recording is the same session again."""
    help_text = subprocess.run(
        [sys.executable, "-m", "rollout.cli", "serve", "--help"],
        capture_output=True,
        text=True,
        check=True,
        env=ENV,
    ).stdout
    assert "--record DIR" in help_text and "recording" in help_text
    out = tmp_path / "out"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "rollout.cli", "serve", "--port", str(port)]
    command += ["--script", str(ws_recording), "--record", str(out), "--log-level", "WARNING"]
    process = subprocess.Popen(command, env=ENV, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None, process.communicate()[1]
                assert time.monotonic() < deadline, "the server did not start"
                time.sleep(0.05)
        replayed = trio.run(replay_session, ws_recording, f"http://127.0.0.1:{port}")
    finally:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    recorded = normalize(recorded_events(ws_recording))
    assert normalize(replayed) == recorded
    assert normalize(recorded_events(out)) == recorded


def test_cli_refuses_a_broken_recording(tmp_path: Path) -> None:
    broken = tmp_path / "conn-1-ws.jsonl"
    broken.write_text('{"dir": "in"}\nnot json\n')
    result = subprocess.run(
        [sys.executable, "-m", "rollout.cli", "serve", "--script", str(broken)],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=30,
    )
    assert result.returncode == 2
    assert "--script" in result.stderr and "not JSON" in result.stderr
