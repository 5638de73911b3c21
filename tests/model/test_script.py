"""Model scripts as data (JSON, TOML, the fixture's dicts) and `rollout serve --script`."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rollout.cli import main
from rollout.conversation.calls import AgentCallSpec, FunctionCallSpec
from rollout.model.hosted.web_search import WebSearchSpec
from rollout.model.policy import CallStep, ErrorStep, TextStep
from rollout.model.script import ScriptError, load, steps


def test_every_step_kind() -> None:
    parsed = steps(
        [
            {"call": "exec", "arguments": {"cmd": "ls"}},
            {"calls": [{"name": "a"}, {"search": "q"}], "text": "looking"},
            {"search": "news"},
            {"error": "server_error", "message": "boom", "delay": 0.5},
            {"text": "done", "delay": 1},
        ]
    )
    assert parsed[0] == CallStep(calls=(FunctionCallSpec(name="exec", arguments='{"cmd":"ls"}'),))
    assert parsed[1] == CallStep(
        calls=(FunctionCallSpec(name="a", arguments="{}"), WebSearchSpec(query="q")),
        text="looking",
    )
    assert parsed[2] == CallStep(calls=(WebSearchSpec(query="news"),))
    assert parsed[3] == ErrorStep(code="server_error", message="boom", delay_s=0.5)
    assert parsed[4] == TextStep(text="done", delay_s=1.0)


@pytest.mark.parametrize(
    ("bad", "where"),
    [
        ([{"nothing": 1}], "steps[0]"),
        ([{"text": "a"}, 5], "steps[1]"),
        ([{"calls": []}], "steps[0]"),
        ([{"calls": [{"arguments": {}}]}], "steps[0].calls[0]"),
        ([{"text": "a", "delay": -1}], "steps[0]"),
    ],
)
def test_bad_steps_say_where(bad: list[object], where: str) -> None:
    with pytest.raises(ScriptError, match=where.replace("[", r"\[").replace("]", r"\]")):
        steps(bad)  # type: ignore[arg-type]


def test_json_and_toml_files(tmp_path: Path) -> None:
    (tmp_path / "s.json").write_text('[{"call": "exec"}, {"text": "ok"}]')
    (tmp_path / "s.toml").write_text(
        'final = "bye"\n[[steps]]\ncall = "exec"\narguments = {cmd = "ls"}\n'
        '[[steps]]\ntext = "ok"\n'
    )
    a, b = load(tmp_path / "s.json"), load(tmp_path / "s.toml")
    assert isinstance(a.steps, list) and len(a.steps) == 2
    assert b.final == "bye" and isinstance(b.steps, list) and b.steps[1] == TextStep(text="ok")
    (tmp_path / "bad.json").write_text("{nope")
    with pytest.raises(ScriptError, match="cannot read"):
        load(tmp_path / "bad.json")


def test_serve_refuses_a_bad_script(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "s.json").write_text('{"steps": "no"}')
    assert main(["serve", "--port", "0", "--script", str(tmp_path / "s.json")]) == 2
    assert "--script" in capsys.readouterr().err


def test_multi_agent_steps_and_the_agents_scripts(tmp_path: Path) -> None:
    path = tmp_path / "team.json"
    path.write_text(
        """{"steps": [{"spawn": [{"agent": "reader_1", "task": "Read a.py"},
                                 {"agent": "reader_2", "task": "Read b.py"}]},
                      {"wait": ["reader_1", "reader_2"]},
                      {"send": {"to": "reader_1", "message": "thanks"}},
                      {"followup": {"to": "reader_2", "task": "Read c.py"}},
                      {"interrupt": "reader_2"}, {"list": true},
                      {"text": "final answer"}],
            "agents": {"reader_1": [{"call": "read_file", "arguments": {"path": "a.py"}},
                                    {"text": "a.py says hi"}]},
            "final": "Done."}"""
    )
    policy = load(path)
    spawn, wait, send, follow, stop, listed, answer = policy.steps  # type: ignore[misc]
    assert [c.arguments for c in spawn.calls] == [
        '{"agent_name":"reader_1","message":"Read a.py"}',
        '{"agent_name":"reader_2","message":"Read b.py"}',
    ]
    assert [c.action for c in spawn.calls] == ["spawn_agent", "spawn_agent"]
    assert wait.calls == (
        AgentCallSpec(action="wait_agent", arguments='{"targets":["reader_1","reader_2"]}'),
    )
    assert send.calls[0] == AgentCallSpec(
        action="send_message", arguments='{"target":"reader_1","message":"thanks"}'
    )
    assert follow.calls[0].action == "followup_task"
    assert stop.calls[0] == AgentCallSpec(
        action="interrupt_agent", arguments='{"target":"reader_2"}'
    )
    assert listed.calls[0] == AgentCallSpec(action="list_agents", arguments="{}")
    assert answer == TextStep(text="final answer")
    assert policy.agents["reader_1"] == [
        CallStep(calls=(FunctionCallSpec(name="read_file", arguments='{"path":"a.py"}'),)),
        TextStep(text="a.py says hi"),
    ]


@pytest.mark.parametrize(
    ("bad", "where"),
    [
        ([{"spawn": []}], "steps[0]"),
        ([{"spawn": [{"task": "x"}]}], "steps[0].spawn[0]"),
        ([{"wait": []}], "steps[0].wait"),
        ([{"send": {"message": "x"}}], "steps[0]"),
    ],
)
def test_bad_multi_agent_steps_say_where(bad: list[object], where: str) -> None:
    with pytest.raises(ScriptError, match=rf"^{re.escape(where)}:"):
        steps(bad)  # type: ignore[arg-type]
