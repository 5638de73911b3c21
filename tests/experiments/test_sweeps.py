"""The sweeps of `rollout compare`: --chain-lengths (points per length and mode, the table and
the published figures beside ours, files), --per-turn (per-turn rows from a server in a child
process, its CPU clock read around each turn), and their flag checks. Structure only: no
assertion on how long anything took."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import trio

from rollout.cli import main
from rollout.experiments.harness.procs import running
from rollout.experiments.sweeps import chains, perturn
from rollout.model.profiles import COST_PROFILES, INFERENCE_PROFILES

INSTANT = INFERENCE_PROFILES["instant"]
CPU_ONLY = COST_PROFILES["cpu-only"]


def test_chain_lengths_parse_and_refuse_bad_lists() -> None:
    assert chains.parse_lengths("8,16,24,32,40") == [8, 16, 24, 32, 40]
    for bad in ("", "8,x", "1,2", "16,8", "8,8"):
        with pytest.raises(ValueError, match="--chain-lengths"):
            chains.parse_lengths(bad)


async def test_a_chain_sweep_runs_every_length_and_mode(tmp_path: Path) -> None:
    run = chains.Chains(
        workload=chains.CHAIN_WORKLOAD,
        lengths=[2, 3, 5],
        profiles=[INSTANT],
        costs=CPU_ONLY,
        repeats=2,
    )
    seen: list[str] = []
    runs = await run.run(lambda r: seen.append(r.mode))
    assert len(runs) == run.total == 3 * 2 * 2
    assert all(r.turns == n for n, r in runs)  # a chain of n turns: n - 1 tool calls
    points = chains.points(runs)
    assert sorted((p.turns, p.mode) for p in points) == sorted(
        (n, m) for n in (2, 3, 5) for m in chains.CHAIN_MODES
    )
    assert all(len(p.ttft_s) == len(p.per_turn_s) == len(p.api_share) == 2 for p in points)
    rows = chains.table(points)
    assert [int(r[1]) for r in rows] == [2, 3, 5]  # one row per length, in order
    assert all(len(r) == len(chains.columns()) for r in rows)
    beside = chains.beside(points)
    assert [r[1] for r in beside] == [chains.PUBLISHED["ttft"][1], chains.PUBLISHED["e2e"][1]]
    written = chains.write(tmp_path, run, runs)
    data = orjson.loads((tmp_path / "chains.json").read_bytes())
    assert data["chain_lengths"] == [2, 3, 5] and len(data["runs"]) == 12
    assert data["published"]["ttft"].startswith("28-41% lower")
    assert data["cost_profile"]["name"] == "cpu-only"
    pytest.importorskip("matplotlib")
    assert tmp_path / "ttft-chain.png" in written
    (tmp_path / "ttft-chain.png").unlink()
    assert main(["compare", "--replot", str(tmp_path)]) == 0  # from chains.json alone
    assert (tmp_path / "ttft-chain.png").exists()


def test_cli_chain_lengths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["compare", "--chain-lengths", "2,3", "--profiles", "instant", "--repeats", "1"]
    assert main([*args, "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "coding-chain" in out and "costs cpu-only" in out and "PR #1770" in out
    assert (tmp_path / "latest" / "chains.json").exists()


def test_cli_per_turn_with_its_default_costs(tmp_path: Path) -> None:
    """--per-turn without --costs runs with the sweeps' cost profile (cpu-only), in a run
    directory of its own."""
    args = ["compare", "--per-turn", "--calls", "1", "--repeats", "1", "--modes", "ws-append"]
    assert main([*args, "--out", str(tmp_path)]) == 0
    data = orjson.loads((tmp_path / "latest" / "per-turn.json").read_bytes())
    assert data["cost_profile"]["name"] == "cpu-only"
    assert {"command", "commit", "created"} <= data.keys()  # its provenance, as for compare


async def test_a_per_turn_sweep_reads_the_server_process_cpu(tmp_path: Path) -> None:
    sweep = perturn.Sweep(
        scenario=perturn.scenario(0, 3),
        profile=INSTANT,
        costs=CPU_ONLY,
        costs_spec="cpu-only",
        modes=["http-full", "ws-chain"],
        repeats=2,
    )
    runs = await sweep.run()
    assert len(runs) == sweep.total == 4
    for r in runs:
        assert len(r.history) == len(r.wall_s) == len(r.cpu_s) == 4  # 3 calls, then the answer
        assert r.history == sorted(r.history) and r.history[-1] > r.history[0] + 3 * 2_000
        assert all(c >= 0 for c in r.cpu_s) and sum(r.cpu_s) > 0
    rows = perturn.per_turn_rows(runs, "ws-chain")
    assert len(rows) == 4 and all(len(wall) == len(cpu) == 2 for _, wall, cpu in rows)
    table = perturn.table(runs, sweep.modes, (1_000, 100_000))
    assert [r[0] for r in table] == ["http-full", "http-full", "ws-chain", "ws-chain"]
    written = perturn.write(tmp_path, sweep, runs)
    data = orjson.loads((tmp_path / "per-turn.json").read_bytes())
    assert len(data["runs"]) == 4 and data["inference_profile"]["name"] == "instant"
    pytest.importorskip("matplotlib")
    assert tmp_path / "per-turn.png" in written
    (tmp_path / "per-turn.png").unlink()
    assert main(["compare", "--replot", str(tmp_path)]) == 0  # from per-turn.json alone
    assert (tmp_path / "per-turn.png").exists()


def test_the_full_sweep_spans_1k_to_100k_tokens() -> None:
    s = perturn.scenario()
    outputs = s.calls * perturn.SWEEP.tool_output_tokens.median  # type: ignore[union-attr]
    assert s.calls == 42 and outputs > 100_000


async def test_a_childs_cpu_clock_counts_its_work() -> None:
    code = "print(0, flush=True)\nimport time\nt = time.process_time()\n"
    code += "while time.process_time() - t < 0.2: pass\ntime.sleep(60)"
    async with running(code) as child:
        first = child.cpu_clock()
        for _ in range(3000):  # until the clock moves (the child's 0.2 s of work)
            if child.cpu_clock() > first:
                break
            await trio.sleep(0.01)
        assert child.cpu_clock() > first >= 0


@pytest.mark.parametrize(
    "args",
    [
        ["--per-turn", "--chain-lengths", "8,16"],
        ["--per-turn", "--profiles", "instant,1000tps"],
        ["--per-turn", "--workload", "chat"],
        ["--chain-lengths", "8,4"],
        ["--chain-lengths", "8,16", "--modes", "ws-chain"],
        ["--chain-lengths", "8,16", "--calls", "3"],
        ["--replot", "/nonexistent"],
        ["--per-turn", "--full"],
    ],
)
def test_cli_sweeps_refuse_bad_flags(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", *args]) == 2
    assert "rollout compare:" in capsys.readouterr().err
