# `rollout load` at CI size: 100 concurrent WebSocket append rollouts against a server in its own
# process, through the module API; the stream checks themselves against a fake server that loses,
# duplicates and repeats events; the command line.
from __future__ import annotations

import resource
from typing import Any

import orjson
import pytest
import trio
from trio_websocket import WebSocketRequest, serve_websocket

from rollout.cli import main
from rollout.experiments.load.run import LoadError, raise_nofile, run_load
from support.waits import TIMEOUT


async def test_100_connections_complete_with_contiguous_events() -> None:
    # The run's own deadline (120 s by default) is a liveness bound, not a speed requirement.
    result = await run_load(connections=100, calls=10)
    assert result.error_kinds() == {}
    assert result.errors == 0
    assert result.lost == 0
    assert result.duplicated == 0
    assert result.completed == 100
    assert result.ok
    for conn in result.conns:
        assert conn.terminals == ["response.completed"]
        assert conn.pauses == 10
        assert conn.seqs == list(range(len(conn.seqs)))
        assert len(conn.overheads) == 10
    assert len({c.response_id for c in result.conns}) == 100
    assert result.peak_open == 100  # every connection was open while the rollouts ran
    lines = [f.line() for f in result.figures()]
    assert all(len(line.split()) == 5 for line in lines)
    names = {line.split()[0]: line.split()[4] for line in lines}
    for name in ("load.completed", "load.errors", "load.events_lost", "load.events_duplicated"):
        assert names[name] == "pass"
    assert "load.turn_overhead.p50" in names and "load.turn_overhead.p99" in names
    # The server's CPU while the rollouts ran: part of its whole run, judged against the target.
    assert 0 < result.rollouts_cpu_s < result.server_cpu_s
    assert result.cpu_per_turn_ms == result.rollouts_cpu_s * 1000 / 1000
    assert names["load.server_cpu_per_turn"] in ("pass", "fail")


# -- the checks catch what they are meant to catch -----------------------------------------------


def _event(kind: str, seq: int, rid: str = "resp_x", **extra: Any) -> str:
    frame: dict[str, Any] = {"type": kind, "sequence_number": seq, **extra}
    if kind in ("response.created", "response.completed", "response.incomplete"):
        frame["response"] = {"id": rid, "status": kind.split(".")[1]}
    return orjson.dumps(frame).decode()


def _pause(seq: int, rid: str = "resp_x") -> str:
    calls = [{"call_id": "call_1", "name": "exec", "item_id": "fc_1"}]
    return _event("response.done", seq, response_id=rid, pending_calls=calls)


FENCE_REPLY = orjson.dumps(
    {"type": "error", "error": {"type": "invalid_request_error", "code": "response_not_found"}}
).decode()


async def run_against(script: list[list[str]], calls: int = 1, timeout: float = TIMEOUT) -> Any:
    """Run the load (one connection) against a fake server that answers the k-th client frame
    with `script[k]`; `timeout` is the load's deadline (short only where it must expire)."""

    async def handler(request: WebSocketRequest) -> None:
        ws = await request.accept()
        for frames in script:
            await ws.get_message()
            for frame in frames:
                await ws.send_message(frame)
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        server = await nursery.start(serve_websocket, handler, "127.0.0.1", 0, None)
        url = f"ws://127.0.0.1:{server.port}/v1/responses"
        result = await run_load(connections=1, calls=calls, timeout=timeout, url=url)
        nursery.cancel_scope.cancel()
    return result


async def test_a_clean_fake_stream_passes() -> None:
    result = await run_against(
        [
            [_event("response.created", 0), _pause(1)],
            [_event("response.output_item.added", 2), _event("response.completed", 3)],
            [FENCE_REPLY],
        ]
    )
    assert result.ok, result.summary()
    assert result.conns[0].overheads and result.conns[0].pauses == 1
    # A server that is not the run's own: its CPU is unknown, and the figure says so.
    verdicts = {f.name: f.line().split()[4] for f in result.figures()}
    assert verdicts["load.server_cpu_per_turn"] == "info"


async def test_lost_duplicated_and_repeated_terminal_events_are_counted() -> None:
    result = await run_against(
        [
            [_event("response.created", 0), _event("response.in_progress", 1), _pause(3)],
            [
                _event("response.output_item.added", 4),
                _event("response.output_item.added", 4),
                _event("response.completed", 5),
            ],
            [_event("response.completed", 6), FENCE_REPLY],
        ]
    )
    assert result.lost == 1  # sequence number 2
    assert result.duplicated == 1  # 4 twice
    assert not result.ok
    assert result.completed == 0
    assert any("second terminal" in kind for kind in result.error_kinds())


async def test_wrong_terminal_missing_pauses_foreign_events_and_timeouts_are_errors() -> None:
    incomplete = await run_against(
        [[_event("response.created", 0), _event("response.incomplete", 1)], [FENCE_REPLY]], calls=1
    )
    kinds = " | ".join(incomplete.error_kinds())
    assert "ended with response.incomplete" in kinds and "0 pauses, expected 1" in kinds
    foreign = await run_against(
        [
            [_event("response.created", 0), _pause(1, rid="resp_other")],
            [_event("response.completed", 2)],
            [FENCE_REPLY],
        ]
    )
    assert any("another response" in kind for kind in foreign.error_kinds())
    silent = await run_against([[_event("response.created", 0)]], timeout=2)  # then nothing
    assert silent.error_kinds() == {"timed out": 1}
    assert not silent.ok


async def test_a_refused_connection_is_an_error() -> None:
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    port = listener.socket.getsockname()[1]
    await listener.aclose()  # nothing listens there any more
    result = await run_load(connections=3, calls=1, timeout=TIMEOUT, url=f"ws://127.0.0.1:{port}/")
    assert result.errors == 3
    assert all(k.startswith("connection failed") for k in result.error_kinds())


# -- limits and the command line -----------------------------------------------------------------


def test_the_open_files_limit_is_raised_or_refused_clearly() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    assert raise_nofile(10) >= max(soft, 10)
    if hard != resource.RLIM_INFINITY:
        assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == hard
        with pytest.raises(LoadError, match="hard limit"):
            raise_nofile(hard + 1)


def test_cli_load_help_and_bad_values(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["load", "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--connections", "--calls", "--timeout", "--url"):
        assert flag in out
    assert "1000" in out and "120" in out
    assert main(["load", "--connections", "0"]) == 2
    assert "--connections" in capsys.readouterr().err


def test_cli_load_small_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["load", "--connections", "5", "--calls", "2", "--timeout", "20"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("rollout load: 5 connections x 2 calls")
    figures = [line.split() for line in out if line.startswith("load.")]
    assert all(len(f) == 5 for f in figures)
    assert ["load.errors", "0", "errors", "=0", "pass"] in figures
