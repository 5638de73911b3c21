# Record and replay with the official SDK: a session is recorded (HTTP chained tool rollout;
# WebSocket chained rollout plus an append rollout), the recording's model is rebuilt as a
# ScriptedPolicy, the recorded requests are replayed against a fresh server with it, and the
# events must be the same modulo ids and timestamps; with another model they must differ.
from __future__ import annotations

import signal
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio
from openai import OpenAI

from rollout.client.replay import normalize, replay_session
from rollout.conversation.calls import FunctionCallSpec
from rollout.model.policy import CallStep, Policy, ScriptedPolicy, TextStep
from rollout.model.recorded import (
    RecordedModel,
    recorded_events,
    replay_requests,
    script_from_recording,
)
from support.events import TERMINAL
from support.frames import append_frame, create_frame
from support.processes import cli, finish, project_env, serve_process
from support.sdk import sdk_client
from support.servers import threaded
from support.tools import EXEC_TOOL, FINAL, INSTRUCTIONS, MODEL, cmd, output, run_exec, tool_script

TURNS = 3


# -- the sessions that get recorded -------------------------------------------------------------


def http_session(client: OpenAI) -> list[str]:
    """A chained tool rollout over HTTP: streamed and JSON turns alternately (every output sent
    with previous_response_id), then a retrieve of the last response. Returns the commands run."""
    ran: list[str] = []
    stream = True
    kwargs: dict[str, Any] = {"input": "Fix the failing tests."}
    while True:
        if stream:
            response = None
            for event in client.responses.create(
                model=MODEL, instructions=INSTRUCTIONS, tools=[EXEC_TOOL], stream=True, **kwargs
            ):
                if event.type in TERMINAL:
                    response = event.response
            assert response is not None
        else:
            response = client.responses.create(
                model=MODEL, instructions=INSTRUCTIONS, tools=[EXEC_TOOL], **kwargs
            )
        assert response.status == "completed", response
        calls = [item for item in response.output if item.type == "function_call"]
        if not calls:
            break
        ran += [orjson.loads(c.arguments)["cmd"] for c in calls]
        outputs = [output(c.call_id, run_exec(c.arguments)) for c in calls]
        kwargs = {"input": outputs, "previous_response_id": response.id}
        stream = not stream
    client.responses.retrieve(response.id)
    return ran


def ws_session(client: OpenAI) -> tuple[list[str], list[str]]:
    """Over one WebSocket: a chained tool rollout (`conn.response.create`), then an append-shape
    rollout (raw `conn.send` frames: `shape: "append"`, `response.append`). Returns the final
    texts of the two rollouts and the commands run in the append rollout."""
    finals: list[str] = []
    appended: list[str] = []
    with client.responses.connect() as conn:
        extra: dict[str, Any] = {"input": [{"role": "user", "content": "Chain it."}]}
        while True:
            conn.response.create(
                model=MODEL, instructions=INSTRUCTIONS, tools=[EXEC_TOOL], store=False, **extra
            )
            response = None
            for event in conn:
                if event.type in TERMINAL:
                    response = event.response
                    break
                assert event.type != "error", event
            assert response is not None and response.status == "completed"
            calls = [item for item in response.output if item.type == "function_call"]
            if not calls:
                finals.append(response.output_text)
                break
            outputs = [output(c.call_id, run_exec(c.arguments)) for c in calls]
            extra = {"input": outputs, "previous_response_id": response.id}
        conn.send(create_frame(input="Append it."))
        args: dict[str, str] = {}
        for event in conn:
            if event.type == "response.output_item.done" and event.item.type == "function_call":
                args[event.item.call_id] = event.item.arguments
            elif event.type == "response.done":
                pause = event.model_dump()
                items = []
                for pending in pause["pending_calls"]:
                    arguments = args[pending["call_id"]]
                    appended.append(orjson.loads(arguments)["cmd"])
                    items.append(output(pending["call_id"], run_exec(arguments)))
                conn.send(append_frame(pause["response_id"], items))
            elif event.type in TERMINAL:
                assert event.response.status == "completed"
                finals.append(event.response.output_text)
                break
            else:
                assert event.type != "error", event
    return finals, appended


def replay(directory: Path, policy: Policy, record: Path | None = None) -> list[dict[str, Any]]:
    """Replay the recorded requests against a fresh server with `policy`; what it sent back."""
    with threaded(policy, record=record) as s:
        return trio.run(replay_session, directory, s.url)


# -- the recordings -----------------------------------------------------------------------------


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
    with threaded(tool_script(TURNS), record=directory) as s, sdk_client(s) as client:
        assert http_session(client) == [cmd(i) for i in range(TURNS)]
    return directory


@pytest.fixture
def ws_recording(tmp_path: Path) -> Path:
    directory = tmp_path / "ws"
    with threaded(tool_script(TURNS), record=directory) as s, sdk_client(s) as client:
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
        cli("serve", "--help"), capture_output=True, text=True, check=True, env=project_env()
    ).stdout
    assert "--record DIR" in help_text and "recording" in help_text
    out = tmp_path / "out"
    args = ["--script", str(ws_recording), "--record", str(out), "--log-level", "WARNING"]
    with serve_process(*args) as served:
        replayed = trio.run(replay_session, ws_recording, f"http://127.0.0.1:{served.port}")
        err = finish(served.proc, signal.SIGINT)
    assert served.proc.returncode == 0, err
    recorded = normalize(recorded_events(ws_recording))
    assert normalize(replayed) == recorded
    assert normalize(recorded_events(out)) == recorded


def test_cli_refuses_a_broken_recording(tmp_path: Path) -> None:
    broken = tmp_path / "conn-1-ws.jsonl"
    broken.write_text('{"dir": "in"}\nnot json\n')
    result = subprocess.run(
        cli("serve", "--script", str(broken)),
        capture_output=True,
        text=True,
        env=project_env(),
        timeout=60,
    )
    assert result.returncode == 2
    assert "--script" in result.stderr and "not JSON" in result.stderr
