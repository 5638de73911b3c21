"""`rollout compare --agents` in process: a tiny sweep (two fleet sizes, two policies, two tool
calls a rollout) prints the engine profile and the verdicts and writes a row per (agents, mode,
kv_policy); `--turns` sweeps the calls; refused flags are one line and exit 2, nothing run."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import orjson
import pytest

from rollout.cli import main
from rollout.experiments.sweeps import agents_report
from rollout.model.accel.profile import DEFAULT_ENGINE, engine_profile
from support import behind

TINY = ["compare", "--agents", "2,3", "--modes", "ws-append", "--kv-policy", "evict,pin"]
HAS_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None


def flat(text: str) -> str:
    """Text with its whitespace runs as one space (the console wraps long lines)."""
    return " ".join(text.split())


def agents_json(out: Path) -> dict[str, Any]:
    data = orjson.loads((out / "latest" / "agents.json").read_bytes())
    assert isinstance(data, dict)
    return data


@pytest.mark.simulated_only(behind.SIMULATED_ENGINE)
def test_a_tiny_agents_sweep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main([*TINY, "--calls", "2", "--jobs", "1", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 0, out
    data = agents_json(tmp_path)
    keys = [(r["agents"], r["mode"], r["kv_policy"]) for r in data["rows"]]
    assert sorted(keys) == sorted((n, "ws-append", p) for n in (2, 3) for p in ("evict", "pin"))
    assert all(r["calls"] == 2 and r["repeats"] == 1 and r["failed"] == 0 for r in data["rows"])
    assert {r["completed"] for r in data["rows"]} == {2, 3}
    assert len(data["runs"]) == 4 and data["engine_profile"]["name"] == DEFAULT_ENGINE
    text = flat(out)
    for line in engine_profile(DEFAULT_ENGINE).describe():
        assert flat(line) in text, line
    verdicts = agents_report.verdicts(data["rows"])
    assert (
        verdicts[0]
        == "ws-append, 2 tool calls: KV memory full at none of these counts (peak 2% at 3)"
    )
    for line in verdicts:
        assert flat(line) in text, line
    assert "published: Continuum" in text
    run = (tmp_path / "latest").resolve()
    assert (run / "engine-trace.json").is_file()
    if HAS_MATPLOTLIB:
        assert (run / "jct-agents.png").is_file() and (run / "kv-occupancy.png").is_file()
        assert not (run / "gain-turns.png").exists()  # one value of calls: no turns figure


def test_turns_sweeps_the_calls(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main([*TINY, "--turns", "2,3", "--jobs", "2", "--out", str(tmp_path)])  # (a pool)
    out = capsys.readouterr().out
    assert code == 0, out
    rows = agents_json(tmp_path)["rows"]
    assert len(rows) == 8 and {r["calls"] for r in rows} == {2, 3}
    assert "pin's gain over evict at 2/3 tool calls" in out
    if HAS_MATPLOTLIB:
        assert ((tmp_path / "latest") / "gain-turns.png").is_file()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--agents", "2", "--kv-policy", "bogus"], "--kv-policy: unknown 'bogus' (known: "),
        (["--agents", "0"], "--agents takes numbers of agents >= 1"),
        (["--agents", "x"], "--agents takes numbers of agents like 8,64,256, not 'x'"),
        (["--agents", "2", "--calls", "2", "--turns", "2,3"], "give one of them"),
        (["--agents", "2", "--turns", "0,2"], "--turns takes increasing tool calls per rollout"),
        (["--agents", "2", "--turns", "3,2"], "like 10,20,40, not '3,2'"),
        (["--agents", "2", "--kv-ttl", "-1"], "--kv-ttl must be a number of seconds >= 0"),
        (["--agents", "2", "--upstream", "http://x"], "drop --upstream, --full and --profiles"),
        (["--agents", "2", "--profiles", "1000tps"], "drop --upstream, --full and --profiles"),
        (["--agents", "2", "--jobs", "0"], "--jobs must be >= 1"),
        (["--agents", "2", "--repeats", "0"], "--repeats must be >= 1"),
        (["--agents", "2", "--engine", "a100"], "a100"),
        (["--agents", "2", "--per-turn"], "--per-turn and --agents are separate runs"),
        (["--kv-ttl", "3"], "--kv-ttl goes with --agents"),
        (["--engine", DEFAULT_ENGINE, "--turns", "2,3"], "--engine, --turns go with --agents"),
    ],
)
def test_refused_flags(
    flags: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", *flags, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rollout compare: "), err
    assert message in flat(err), err
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []  # nothing run, nothing written
