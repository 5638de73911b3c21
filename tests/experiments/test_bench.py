"""`rollout bench` output: one parseable line per figure."""

from __future__ import annotations

from pathlib import Path

import pytest

from rollout.cli import main
from rollout.experiments.bench.run import BENCHES, Figure


def test_figure_lines_are_stable_and_parseable() -> None:
    lines = [
        Figure("events_per_second.ratio", 0.91234, "x", ">=0.8", True).line(),
        Figure("memory.rss_with_suspended_rollouts", 312.5, "MB", "<=300", False).line(),
        Figure("first_token.raw_round_trip", 0.25, "ms").line(),
    ]
    assert lines == [
        "events_per_second.ratio 0.9123 x >=0.8 pass",
        "memory.rss_with_suspended_rollouts 312.5 MB <=300 fail",
        "first_token.raw_round_trip 0.25 ms - info",
    ]
    for line in lines:
        assert len(line.split()) == 5


def test_cli_bench_refuses_unknown_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "nope"]) == 2
    assert "overhead" in capsys.readouterr().err
    assert set(BENCHES) == {
        "overhead",
        "events",
        "concurrency",
        "memory",
        "first-token",
        "first-token-stages",
        "ideal",
        "upstream-client",
        "aimock",
        "gateway",
    }


def test_cli_bench_reports_a_server_that_did_not_start(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "rollout.experiments.bench.run._MEMORY_SERVER", "raise SystemExit('broken')"
    )
    assert main(["bench", "memory"]) == 2
    err = capsys.readouterr().err
    assert "rollout bench: the server process did not start: broken" in err
    assert "Traceback" not in err


async def test_events_bench_measures_both_transports_against_their_baselines() -> None:
    """A small run end to end: the raw-socket client reads every event of each server, and each
    transport is reported beside its baseline (no figure's value is asserted)."""
    from rollout.experiments.bench.figure import Figure as F
    from rollout.experiments.bench.streams import events_per_second

    figures: list[F] = []
    await events_per_second(figures.append, tokens=50, repeats=1)
    names = [f.name for f in figures]
    assert names == [
        "events_per_second.sse.ours",
        "events_per_second.sse.coalescing_h11_baseline",
        "events_per_second.sse.ratio",
        "events_per_second.ws.ours",
        "events_per_second.ws.own_transport_baseline",
        "events_per_second.ws.ratio",
    ]
    assert all(f.value > 0 for f in figures)
    assert [f.target for f in figures if f.passed is not None] == [">=0.95", ">=0.7"]


def test_the_raw_websocket_client_frames_and_counts() -> None:
    from rollout.experiments.bench.streams import _ws_frame, ws_counter

    assert _ws_frame(b"hi") == b"\x81\x82\0\0\0\0hi"
    assert _ws_frame(b"x" * 200)[:4] == b"\x81\xfe\x00\xc8"
    last = ws_counter(2)
    assert [last(b""), last(b"")] == [False, True]


async def test_concurrency_bench_reports_percentiles_for_each_count() -> None:
    from rollout.experiments.bench.concurrency import first_delta_under_load
    from rollout.experiments.bench.figure import Figure as F

    figures: list[F] = []
    await first_delta_under_load(figures.append, counts=(1, 3), repeats=1)
    assert [f.name for f in figures] == [
        "first_delta.p50.1_connections",
        "first_delta.p99.1_connections",
        "first_delta.p50.3_connections",
        "first_delta.p99.3_connections",
    ]
    assert all(f.value > 0 for f in figures)


def test_turn_cpu_figures_are_named_and_judged_from_their_values() -> None:
    """The per-turn CPU lines from given medians: a line per mode and size, the ratio gated for
    the cached modes only, the http-full 100k figure against its 71 ms, the HTTP modes' cost per
    history token; each verdict follows from its value and target."""
    from rollout.experiments.bench.turncost import MODES, figures

    sizes = (1_000, 10_000, 100_000)
    cpu = {(m, n): 0.002 for m in MODES for n in sizes}
    cpu[("ws-chain", 100_000)] = 0.003  # 1.5 x: fails <=1.2
    cpu[("http-full", 100_000)] = 0.0502  # 50.2 ms: passes <=71
    cpu[("http-chain", 100_000)] = 0.101
    lines = {f.name: f for f in figures(cpu, sizes, MODES)}
    assert [n for n in lines if n.startswith("turn_cpu.")] == [
        f"turn_cpu.{m}.{k}k" for k in (1, 10, 100) for m in MODES
    ]
    assert lines["turn_cpu.http-full.100k"].line() == "turn_cpu.http-full.100k 50.2 ms <=71 pass"
    assert lines["turn_cpu_ratio.ws-chain.100k_vs_1k"].line().endswith("1.5 x <=1.2 fail")
    assert lines["turn_cpu_ratio.ws-append.100k_vs_1k"].line().endswith("1 x <=1.2 pass")
    assert lines["turn_cpu_ratio.http-full.100k_vs_1k"].passed is None
    assert lines["turn_cpu_per_history_token.http-chain"].line() == (
        "turn_cpu_per_history_token.http-chain 1 us/token - info"
    )
    assert [n for n in lines if n.startswith("turn_cpu_per")] == [
        "turn_cpu_per_history_token.http-full",
        "turn_cpu_per_history_token.http-chain",
    ]
    cpu[("http-full", 100_000)] = 0.0711
    again = {f.name: f for f in figures(cpu, sizes, MODES)}
    assert again["turn_cpu.http-full.100k"].line() == "turn_cpu.http-full.100k 71.1 ms <=71 fail"


async def test_the_overhead_bench_reads_the_server_processes_cpu() -> None:
    """A small run end to end: one server process per size, every mode and size measured."""
    from rollout.experiments.bench.figure import Figure as F
    from rollout.experiments.bench.turncost import overhead_vs_history

    figures: list[F] = []
    await overhead_vs_history(
        figures.append, sizes=(100, 300), repeats=1, modes=("http-full", "ws-chain"), calls=2
    )
    assert [f.name for f in figures] == [
        "turn_cpu.http-full.100",
        "turn_cpu.ws-chain.100",
        "turn_cpu.http-full.300",
        "turn_cpu.ws-chain.300",
        "turn_cpu_ratio.http-full.300_vs_100",
        "turn_cpu_ratio.ws-chain.300_vs_100",
        "turn_cpu_per_history_token.http-full",
    ]
    assert all(f.value > 0 for f in figures[:4])


async def test_the_first_token_bench_reports_both_echoes_and_the_replayed_frames() -> None:
    from rollout.experiments.bench.figure import Figure as F
    from rollout.experiments.bench.firsttoken import first_token

    figures: list[F] = []
    await first_token(figures.append, samples=3, warmup=1)
    assert [(f.name, f.target) for f in figures] == [
        ("first_token.warm_connection", "-"),
        ("first_token.raw_round_trip", "-"),
        ("first_token.ratio", "<=1.5"),
        ("first_token.minimal_echo_round_trip", "-"),
        ("first_token.ratio_vs_minimal_echo", "-"),
        ("first_token.replayed_frames", "-"),
        ("first_token.replayed_ratio", "-"),
    ]
    assert all(f.value > 0 for f in figures)
    assert figures[2].passed == (figures[2].value <= 1.5)


async def test_the_first_token_stages_bench_reports_each_stage_and_step() -> None:
    """A small run end to end: the full server, its four cut copies and the replay each answer
    every turn, and each stage and step is reported over the echo's round trip, without a
    target."""
    from rollout.experiments.bench.figure import Figure as F
    from rollout.experiments.bench.stages import first_token_stages

    figures: list[F] = []
    await first_token_stages(figures.append, samples=3, warmup=1)
    assert [(f.name, f.unit) for f in figures] == [
        ("first_token_stages.echo_round_trip", "ms"),
        *(
            (f"first_token_stages.{stage}", "x")
            for stage in ("replay", "decoded", "lane", "prepared", "loop", "full")
        ),
        *(
            (f"first_token_stages.step.{step}", "x")
            for step in ("decode", "to_lane", "prepare", "start_events", "sampling")
        ),
    ]
    assert all(f.target == "-" and f.passed is None for f in figures)
    assert all(f.value > 0 for f in figures[:7])


async def test_each_cut_server_answers_with_the_recorded_frames() -> None:
    """A cut server stops the create where its stage says: it answers with the full server's
    recorded frames byte for byte (the response's id is the recorded one), except at `loop`,
    where its own `created` and `in_progress` come first."""
    import orjson
    import trio

    from rollout.experiments.bench.firsttoken import TEXT_SERVER, recorded_frames
    from rollout.experiments.bench.stages import CUT_SERVER, STAGES
    from rollout.experiments.bench.streams import ws_frames
    from rollout.experiments.harness.procs import running

    async with running(TEXT_SERVER) as server:
        with await recorded_frames(server.port) as recorded:
            frames = orjson.loads(Path(recorded.name).read_bytes())
            for stage in STAGES:
                got: list[str] = []

                def collect(data: bytes, got: list[str] = got) -> bool:
                    got.append(data.decode())
                    return b'"response.completed"' in data[:40]

                async with running(CUT_SERVER, [recorded.name, stage]) as cut:
                    await trio.to_thread.run_sync(ws_frames, cut.port, collect)
                if stage == "loop":
                    assert got[2:] == frames[2:] and got[0] != frames[0]
                else:
                    assert got == frames, stage


def test_first_token_stage_steps_are_the_differences_between_stages() -> None:
    from rollout.experiments.bench.stages import figures

    median = {"echo": 0.001, "replay": 0.001, "decoded": 0.0012, "lane": 0.0012}
    median |= {"prepared": 0.0016, "loop": 0.0017, "full": 0.002}
    lines = [f.line() for f in figures(median)]
    assert lines[0] == "first_token_stages.echo_round_trip 1 ms - info"
    assert lines[6] == "first_token_stages.full 2 x - info"
    assert lines[7:] == [
        "first_token_stages.step.decode 0.2 x - info",
        "first_token_stages.step.to_lane 0 x - info",
        "first_token_stages.step.prepare 0.4 x - info",
        "first_token_stages.step.start_events 0.1 x - info",
        "first_token_stages.step.sampling 0.3 x - info",
    ]


def test_a_cut_server_refuses_an_unknown_stage() -> None:
    from rollout.experiments.bench.stages import serve_cut

    with pytest.raises(ValueError, match="unknown stage 'nope'"):
        serve_cut(__file__, "nope")


def test_aimock_figures_judge_rollouts_share_of_aimocks_time() -> None:
    from rollout.experiments.bench.peer import figures

    got = {
        "sse.long_stream": {"rollout": [0.2, 0.3, 0.25], "aimock": [0.25, 0.25, 0.3]},
        "ws.long_stream": {"rollout": [0.2], "aimock": [0.3]},
        "sse.first_delta": {"rollout": [0.002], "aimock": [0.001]},
        "ws.first_delta": {"rollout": [0.001], "aimock": [0.001]},
        "sse.events": {"rollout": [20_008], "aimock": [20_006]},
        "ws.events": {"rollout": [20_008, 20_008], "aimock": [20_006]},
    }
    lines = [f.line() for f in figures(got)]
    assert lines == [
        "aimock.sse.long_stream.rollout 250 ms - info",
        "aimock.sse.long_stream.aimock 250 ms - info",
        "aimock.sse.long_stream.ratio 1 x <=1 pass",
        "aimock.ws.long_stream.rollout 200 ms - info",
        "aimock.ws.long_stream.aimock 300 ms - info",
        "aimock.ws.long_stream.ratio 0.6667 x <=0.5 fail",
        "aimock.sse.first_delta.rollout 2 ms - info",
        "aimock.sse.first_delta.aimock 1 ms - info",
        "aimock.sse.first_delta.ratio 2 x - info",
        "aimock.ws.first_delta.rollout 1 ms - info",
        "aimock.ws.first_delta.aimock 1 ms - info",
        "aimock.ws.first_delta.ratio 1 x - info",
        "aimock.sse.long_stream.events.rollout 2.001e+04 events - info",
        "aimock.sse.long_stream.events.aimock 2.001e+04 events - info",
        "aimock.ws.long_stream.events.rollout 2.001e+04 events - info",
        "aimock.ws.long_stream.events.aimock 2.001e+04 events - info",
    ]


def test_the_aimock_bench_is_skipped_with_its_reason_without_aimock(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr("rollout.experiments.bench.peer.AIMOCK_CLI", tmp_path / "cli.js")
    assert main(["bench", "aimock"]) == 0
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.startswith("rollout bench aimock: skipped: ")
    assert "npm ci" in out.err or "node is not installed" in out.err


async def test_the_aimock_bench_runs_both_servers_side_by_side() -> None:
    """A small run end to end when Node and aimock are here (tests/upstream, `npm ci`): both
    servers answer the same long and short prompts over SSE and WebSocket."""
    from rollout.experiments.bench.figure import Figure as F
    from rollout.experiments.bench.peer import missing, side_by_side

    reason = missing()
    if reason is not None:
        pytest.skip(reason)
    figures: list[F] = []
    await side_by_side(figures.append, tokens=50, repeats=1, shorts=1)
    names = [f.name for f in figures]
    assert len(names) == 16 and names[2] == "aimock.sse.long_stream.ratio"
    assert [f.target for f in figures if f.passed is not None] == ["<=1", "<=0.5"]
    events = {f.name: f.value for f in figures if ".events." in f.name}
    assert set(events.values()) == {events["aimock.ws.long_stream.events.rollout"]}
    assert all(f.value > 0 for f in figures)
