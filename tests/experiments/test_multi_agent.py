"""`rollout compare --multi-agent`: the workload gives every shape the same model steps (the
hosted per-agent script and the client-orchestrated conversations), a small sweep runs each
shape for each K against a real server over loopback with the server counting the sampling
steps it ran, and the table, verdict lines, multi-agent.json and the figure come out of it.
Structure only: no assertion on how long anything took."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from rollout.cli import main
from rollout.conversation.context import Context
from rollout.experiments.sweeps import multiagent
from rollout.experiments.sweeps.multishapes import SHAPES, hosted_problem, run_shape
from rollout.experiments.workloads.multiagent import MultiAgent
from rollout.model.policy import CallStep, TextStep
from rollout.model.profiles import COST_PROFILES, INFERENCE_PROFILES

INSTANT = INFERENCE_PROFILES["instant"]
CPU_ONLY = COST_PROFILES["cpu-only"]


def test_the_hosted_script_and_the_client_steps_are_the_same_steps() -> None:
    scenario = MultiAgent(agents=3, calls=2).build()
    script = scenario.hosted_script()
    assert [next(iter(s)) for s in script["steps"]] == ["spawn", "wait", "text"]
    assert [a["agent"] for a in script["steps"][0]["spawn"]] == scenario.names
    assert script["steps"][1]["wait"] == scenario.names
    root = scenario.root_steps()
    assert len(root) == len(script["steps"]) == 3
    assert isinstance(root[0], CallStep) and len(root[0].calls) == 3  # a spawn call per agent
    assert isinstance(root[2], TextStep) and root[2].text == script["steps"][2]["text"]
    for agent in scenario.agents:
        own = script["agents"][agent.name]
        assert len(own) == len(agent.steps) == 3  # 2 calls and the answer
        assert [s.get("call") for s in own] == ["read_file", "read_file", None]
        assert own[-1]["text"] == agent.steps[-1].text  # type: ignore[union-attr]
    assert scenario.workload.model_steps == 3 + 3 * 3


def test_the_client_policy_plays_each_conversation_by_its_task() -> None:
    scenario = MultiAgent(agents=2, calls=1).build()
    policy = scenario.client_policy()
    second = scenario.agents[1]
    step = policy.next_step(Context(last_user_text=second.task))
    assert step == second.steps[0]
    root = policy.next_step(Context(last_user_text=scenario.task))
    assert isinstance(root, CallStep) and [c.name for c in root.calls] == ["spawn_agent"] * 2


def test_counts_parse_and_refuse_bad_lists() -> None:
    assert multiagent.parse_counts("1,2,4,8") == [1, 2, 4, 8]
    for bad in ("", "0,1", "2,1", "1,x", "1,1", "17"):
        with pytest.raises(ValueError, match="--multi-agent"):
            multiagent.parse_counts(bad)


async def test_a_small_sweep_runs_each_shape_with_the_same_model_steps(tmp_path: Path) -> None:
    sweep = multiagent.Sweep(counts=[1, 2], profile=INSTANT, costs=CPU_ONLY, calls=1, repeats=2)
    if "hosted" in sweep.skipped:
        assert "spawns subagents" in sweep.skipped["hosted"]
    assert sorted([*sweep.shapes, *sweep.skipped]) == sorted(SHAPES)
    seen: list[str] = []
    runs = await sweep.run(lambda r: seen.append(r.shape))
    assert len(runs) == sweep.total == 2 * len(sweep.shapes) * 2
    for run in runs:
        steps = 3 + run.agents * (1 + 1)
        assert run.model_steps == steps, (run.shape, run.agents)  # counted by the server
        assert run.tool_calls == run.agents  # one read_file per subagent, run by the client
        assert run.bytes_sent > 0 and run.bytes_received > 0 and run.events > 0
    by = {(r.shape, r.agents): r for r in runs}
    assert by[("client-ws", 2)].connections == 1  # a lane per conversation
    assert by[("client-http", 2)].connections == 3  # a connection per conversation
    assert by[("client-ws", 2)].requests == by[("client-http", 2)].requests == 3 + 2 * 2
    assert by[("client-ws", 1)].text == by[("client-http", 1)].text  # the root's same answer
    ps = multiagent.points(runs)
    assert multiagent.same_steps(ps)
    assert [(p["agents"], p["shape"]) for p in ps] == [
        (k, s) for k in (1, 2) for s in SHAPES if s in sweep.shapes
    ]
    rows = multiagent.table(ps)
    assert all(len(r) == len(multiagent.COLUMNS) for r in rows)
    lines = multiagent.verdicts(ps)
    assert len(lines) == 2 * (len(sweep.shapes) - 1)
    assert all("against client-http" in line and "same model steps" in line for line in lines)
    written = multiagent.write(tmp_path, sweep, runs)
    data = orjson.loads((tmp_path / "multi-agent.json").read_bytes())
    assert data["agent_counts"] == [1, 2] and len(data["runs"]) == len(runs)
    assert data["inference_profile"]["name"] == "instant"
    assert data["cost_profile"]["name"] == "cpu-only"
    assert data["skipped"] == sweep.skipped
    pytest.importorskip("matplotlib")
    assert tmp_path / "multi-agent.png" in written
    (tmp_path / "multi-agent.png").unlink()
    assert main(["compare", "--replot", str(tmp_path)]) == 0  # from multi-agent.json alone
    assert (tmp_path / "multi-agent.png").exists()


def test_points_notice_different_model_steps() -> None:
    """same_steps fails a sweep whose shapes ran different numbers of steps."""
    ps = [
        {"agents": 1, "shape": "client-ws", "model_steps": [5, 5]},
        {"agents": 1, "shape": "client-http", "model_steps": [5, 6]},
    ]
    assert not multiagent.same_steps(ps)


async def test_the_hosted_shape_runs_the_same_model_steps() -> None:
    scenario = MultiAgent(agents=2, calls=2).build()
    problem = hosted_problem(scenario)
    if problem is not None:
        pytest.skip(problem)
    hosted = await run_shape("hosted", scenario, INSTANT, CPU_ONLY)
    client = await run_shape("client-ws", scenario, INSTANT, CPU_ONLY)
    assert hosted.model_steps == client.model_steps == scenario.workload.model_steps
    assert hosted.tool_calls == client.tool_calls == 2 * 2
    assert hosted.requests == 1 + 2 * 2  # the create and an inject per call
    assert hosted.text == client.text == scenario.answer


def test_cli_multi_agent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["compare", "--multi-agent", "1", "--profiles", "instant", "--repeats", "1"]
    assert main([*args, "--calls", "1", "--costs", "cpu-only", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "multi-agent" in out and "inference instant" in out and "costs cpu-only" in out
    assert "client-ws against client-http" in out
    assert (tmp_path / "latest" / "multi-agent.json").exists()


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--multi-agent", "0"], "subagent counts"),
        (["--multi-agent", "--modes", "client-ws,bogus"], "bogus"),
        (["--multi-agent", "--jobs", "2"], "--jobs"),
        (["--multi-agent", "--calls", "0"], "--calls"),
        (["--multi-agent", "--agents"], "separate runs"),
    ],
)
def test_cli_multi_agent_refuses_bad_flags(
    extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["compare", *extra]) == 2
    assert message in capsys.readouterr().err
