# The default model works like a model would (rollout.model.policy.DefaultPolicy): it picks the
# offered tools relevant to the prompt (a shell tool for coding prompts, never goal or ask-the-
# user tools unless asked, web search only for current information), writes arguments a model
# would (required properties, values from the conversation, integers for `*_ms` and counts),
# comments before its calls and answers from what the tools returned; deterministic per seed.
# Driven directly on a Context, with Codex CLI 0.171's own tool definitions (tests/fixtures).
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from protocol import codec
from protocol.items import (
    FunctionCall,
    FunctionCallOutput,
    Message,
    SearchAction,
    Tool,
    UrlSource,
    WebSearchCall,
)
from rollout.conversation.calls import FunctionCallSpec
from rollout.conversation.context import Context
from rollout.conversation.work import Work
from rollout.model.hosted.web_search import WebSearchSpec
from rollout.model.policy import CallStep, DefaultPolicy, TextStep

CODEX_TOOLS: list[dict[str, Any]] = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "codex-0.171-tools.json").read_text()
)
LISTING = (
    "Chunk ID: 1f2e\nWall time: 0.0101 seconds\nProcess exited with code 0\n"
    "Original token count: 60\nOutput:\ntotal 16\n"
    "drwxr-xr-x 3 root root 4096 Dec  1 10:18 .\n"
    "drwxr-xr-x 5 root root 4096 Dec  1 10:18 ..\n"
    "-rw-r--r-- 1 root root   15 Dec  1 10:18 README.md\n"
    "-rw-r--r-- 1 root root  120 Dec  1 10:18 pyproject.toml\n"
    "drwxr-xr-x 2 root root 4096 Dec  1 10:18 src\n"
)
FIND = "Process exited with code 0\nOutput:\n./README.md\n./pyproject.toml\n./src/main.py\n"
README = "Process exited with code 0\nOutput:\n# Demo project\nA small demo.\n"
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The current weather of a city.",
    "parameters": {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "units": {"type": "string", "enum": ["metric", "imperial"]},
            "days": {"type": "number", "description": "How many days to forecast."},
        },
        "required": ["city"],
    },
}
NOTES = {
    "type": "function",
    "name": "add_note",
    "description": "Store a note.",
    "parameters": {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    },
}


def context(prompt: str, tools: list[dict[str, Any]]) -> Context:
    ctx = Context()
    parsed: list[Tool] = [codec.converter.structure(t, Tool) for t in tools]  # type: ignore[arg-type]
    ctx.set_header("You are a coding agent.", parsed, Work())
    ctx.extend([Message(role="user", content=prompt)], Work())
    return ctx


def run(
    prompt: str,
    tools: list[dict[str, Any]],
    outputs: dict[str, str] | None = None,
    policy: DefaultPolicy | None = None,
) -> tuple[list[CallStep], TextStep]:
    """Plays the model to its answer; a call's output is the first `outputs` entry whose key
    starts its command (or its arguments), else "ok"."""
    ctx = context(prompt, tools)
    policy = policy or DefaultPolicy()
    steps: list[CallStep] = []
    for n in range(12):
        step = policy.next_step(ctx)
        if isinstance(step, TextStep):
            return steps, step
        assert isinstance(step, CallStep), step
        steps.append(step)
        items: list[Any] = [Message(role="assistant", content=step.text)] if step.text else []
        results = []
        for i, spec in enumerate(step.calls):
            if isinstance(spec, WebSearchSpec):
                action = SearchAction(query=spec.query, sources=(UrlSource(url="https://a.b/"),))
                items.append(WebSearchCall(id=f"ws_{n}", status="completed", action=action))
                continue
            call_id = f"call_{n}_{i}"
            items.append(FunctionCall(call_id=call_id, name=spec.name, arguments=spec.arguments))
            args = json.loads(spec.arguments)
            key = args.get("cmd") or spec.arguments
            text = next((v for k, v in (outputs or {}).items() if key.startswith(k)), "ok")
            results.append(FunctionCallOutput(call_id=call_id, output=text))
        ctx.extend(items, Work(), scan=False)
        ctx.extend(results, Work())
    raise AssertionError("the model never answered")


def calls(steps: list[CallStep]) -> list[FunctionCallSpec]:
    return [c for s in steps for c in s.calls if isinstance(c, FunctionCallSpec)]


def test_codex_list_files_runs_read_only_commands_and_names_the_files() -> None:
    outputs = {"ls": LISTING, "find": FIND, "sed": README}
    steps, final = run("list the files here", CODEX_TOOLS, outputs)
    made = calls(steps)
    assert [c.name for c in made] == ["exec_command"] * 3
    commands = [json.loads(c.arguments)["cmd"] for c in made]
    assert commands[0].startswith("ls") and commands[1].startswith("find")
    assert commands[2] == "sed -n '1,40p' README.md"
    assert not any(isinstance(c, WebSearchSpec) for s in steps for c in s.calls)
    assert all(s.text.endswith(".") for s in steps)  # a sentence of commentary before each
    for name in ("README.md", "pyproject.toml", "src/", "src/main.py", '"# Demo project"'):
        assert name in final.text


def test_codex_arguments_are_what_a_model_writes() -> None:
    for seed in range(40):
        steps, _ = run("list the files here", CODEX_TOOLS, policy=DefaultPolicy(seed=seed))
        for c in calls(steps):
            args = json.loads(c.arguments)
            # Required `cmd` always; never a flag, an escalation or a shell binary it has no
            # reason to set; numbers (`yield_time_ms`, `max_output_tokens`) are whole.
            assert "cmd" in args
            assert not set(args) & {"login", "tty", "shell", "sandbox_permissions", "prefix_rule"}
            assert not set(args) & {"justification", "workdir"}
            for key in ("yield_time_ms", "max_output_tokens"):
                if key in args:
                    assert isinstance(args[key], int) and args[key] > 0, args


def test_goal_person_and_session_tools_are_left_alone() -> None:
    for prompt in ("list the files here", "What does src/main.py do?", "Go."):
        steps, _ = run(prompt, CODEX_TOOLS, {"ls": LISTING})
        names = {c.name for c in calls(steps)}
        assert names <= {"exec_command"}, (prompt, names)


def test_web_search_only_for_current_information() -> None:
    tools = [*CODEX_TOOLS[:1], {"type": "web_search"}]
    steps, _ = run("list the files here", tools, {"ls": LISTING})
    assert not any(isinstance(c, WebSearchSpec) for s in steps for c in s.calls)
    steps, final = run("What is the latest news from Kyiv?", [{"type": "web_search"}])
    [search] = [c for s in steps for c in s.calls if isinstance(c, WebSearchSpec)]
    assert "Kyiv" in search.query and "news" in search.query
    assert "Kyiv" in final.text


def test_values_come_from_the_prompt_one_call_per_place() -> None:
    steps, final = run(
        "What is the weather in Kyiv and in Lviv?",
        [NOTES, WEATHER],
        {'{"city":"Kyiv"': "Kyiv: 3C, snow", '{"city":"Lviv"': "Lviv: 1C, fog"},
    )
    made = calls(steps)
    assert [(c.name, json.loads(c.arguments)["city"]) for c in made] == [
        ("get_weather", "Kyiv"),
        ("get_weather", "Lviv"),
    ]  # the relevant tool, not the first declared; no repeat of the same call
    assert "Kyiv: 3C, snow" in final.text and "Lviv: 1C, fog" in final.text


def test_integer_like_numbers_are_whole_even_under_type_number() -> None:
    for seed in range(40):
        steps, _ = run(
            "Weather in Paris for the next days", [WEATHER], policy=DefaultPolicy(seed=seed)
        )
        for c in calls(steps):
            args = json.loads(c.arguments)
            assert args["city"] == "Paris"
            if "days" in args:
                assert isinstance(args["days"], int)


def test_tools_the_prompt_gives_no_reason_to_use_are_not_called() -> None:
    tools = [
        {"type": "function", "name": n, "parameters": {"type": "object", "properties": {}}}
        for n in ("zeta", "alpha", "mid")
    ]
    steps, final = run("Go.", tools)
    assert calls(steps) == []
    assert final.text


def test_relevant_tools_run_in_declared_order_on_ties() -> None:
    tools = [
        {"type": "function", "name": n, "parameters": {"type": "object", "properties": {}}}
        for n in ("report_zeta", "report_alpha", "report_mid")
    ]
    steps, _ = run("Write the report.", tools)
    assert [c.name for c in calls(steps)] == ["report_zeta", "report_alpha", "report_mid"]


def test_deterministic_under_the_seed() -> None:
    outputs = {"ls": LISTING, "find": FIND, "sed": README}
    one = run("list the files here", CODEX_TOOLS, outputs, DefaultPolicy(seed=5))
    two = run("list the files here", CODEX_TOOLS, outputs, DefaultPolicy(seed=5))
    assert one == two
    answers = {
        run("Tell me about trio.", [], policy=DefaultPolicy(seed=s))[1].text for s in range(6)
    }
    assert len(answers) > 1


def test_answer_length_follows_the_profile() -> None:
    from rollout.conversation import tokens as tok

    for n in (20, 80):
        _, final = run("Tell me about trio.", [], policy=DefaultPolicy(answer_tokens=n))
        assert 0.5 * n <= tok.count(final.text) <= 1.6 * n, (n, final.text)
