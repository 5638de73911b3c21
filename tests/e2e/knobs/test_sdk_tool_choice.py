# tool_choice, parallel_tool_calls and max_tool_calls with the official SDK over HTTP and
# WebSocket: what the simulated model may call, what its first step must call, the real API's
# errors (with `param`) for choices the request cannot satisfy, and scripts held to the same rules.
from __future__ import annotations

import json
from typing import Any

from rollout.conversation.calls import FunctionCallSpec
from rollout.model.policy import CallStep, DefaultPolicy, ScriptedPolicy, call, search, text
from support.knobs import Serve, calls, kinds, tool

TOOLS = [tool("alpha"), tool("beta"), tool("gamma")]
ALL = "Use alpha, beta and gamma."  # a prompt all three tools fit
SEARCH = {"type": "web_search"}


def allowed(mode: str, *names: str) -> Any:
    entries = [{"type": "function", "name": n} for n in names]
    return {"type": "allowed_tools", "mode": mode, "tools": entries}


def test_none_answers_without_calling(serve: Serve) -> None:
    s = serve(policy=DefaultPolicy(tool_calls=3))
    response = s.create(input="Use your tools.", tools=TOOLS, tool_choice="none")
    assert kinds(response) == ["message"]
    assert response.tool_choice == "none"


def test_none_holds_a_script_to_it(serve: Serve) -> None:
    s = serve(policy=ScriptedPolicy([CallStep(calls=(search("x").calls[0],), text="Looking.")]))
    response = s.create(input="Go.", tools=[*TOOLS, SEARCH], tool_choice="none")
    assert kinds(response) == ["message"]
    assert response.output_text == "Looking."


def test_named_function_is_the_one_called(serve: Serve) -> None:
    s = serve(policy=DefaultPolicy(tool_calls=3))
    choice: Any = {"type": "function", "name": "gamma"}
    response = s.create(input="Go.", tools=TOOLS, tool_choice=choice)
    assert [c.name for c in calls(response)] == ["gamma"]
    assert response.tool_choice.name == "gamma"


def test_a_forced_call_takes_its_arguments_from_the_prompt(serve: Serve) -> None:
    # tool_calls=0: the model would answer; the forced call is written by rollout.model.choice.
    s = serve(policy=DefaultPolicy(tool_calls=0))
    weather = tool("get_weather", city={"type": "string"})
    choice: Any = {"type": "function", "name": "get_weather"}
    response = s.create(input="Is it cold in Oslo?", tools=[weather], tool_choice=choice)
    [made] = calls(response)
    assert json.loads(made.arguments) == {"city": "Oslo"}


def test_named_function_overrides_a_scripted_answer(serve: Serve) -> None:
    s = serve(policy=ScriptedPolicy([text("No tools today.")]))
    choice: Any = {"type": "function", "name": "beta"}
    response = s.create(input="Go.", tools=TOOLS, tool_choice=choice)
    [fc] = calls(response)
    assert fc.name == "beta" and set(json.loads(fc.arguments)) == {"q"}


def test_allowed_tools_narrow_the_choice(serve: Serve) -> None:
    s = serve(policy=DefaultPolicy(tool_calls=3, parallel=3))
    choice: Any = {
        "type": "allowed_tools",
        "mode": "auto",
        "tools": [{"type": "function", "name": "beta"}],
    }
    response = s.create(input=ALL, tools=TOOLS, tool_choice=choice)
    assert {c.name for c in calls(response)} == {"beta"}


def test_allowed_tools_required_forces_a_call(serve: Serve) -> None:
    s = serve(policy=DefaultPolicy(tool_calls=0))
    choice: Any = {
        "type": "allowed_tools",
        "mode": "required",
        "tools": [{"type": "function", "name": "beta"}],
    }
    response = s.create(input="Go.", tools=TOOLS, tool_choice=choice)
    assert [c.name for c in calls(response)] == ["beta"]


def test_required_calls_even_when_the_model_would_answer(serve: Serve) -> None:
    s = serve(policy=DefaultPolicy(tool_calls=0))
    assert kinds(s.create(input="Go.", tools=TOOLS)) == ["message"]
    response = s.create(input="Go.", tools=TOOLS, tool_choice="required")
    assert len(calls(response)) == 1


def test_hosted_choice_searches_first(serve: Serve) -> None:
    s = serve(policy=ScriptedPolicy([call("alpha", {"q": "x"})]))
    choice: Any = {"type": "web_search_preview"}
    response = s.create(input="News?", tools=[*TOOLS, SEARCH], tool_choice=choice)
    assert kinds(response)[0] == "web_search_call"


def test_required_without_tools_is_refused(serve: Serve) -> None:
    failure = serve().error(input="Go.", tool_choice="required")
    assert failure.param == "tool_choice"
    assert "only allowed when 'tools' are specified" in failure.message


def test_unknown_function_name_is_refused(serve: Serve) -> None:
    choice: Any = {"type": "function", "name": "delta"}
    failure = serve().error(input="Go.", tools=TOOLS, tool_choice=choice)
    assert failure.param == "tool_choice"
    assert failure.message == "Tool choice 'delta' not found in 'tools' parameter."


def test_allowed_tools_entry_not_offered_is_refused(serve: Serve) -> None:
    choice: Any = {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "web_search"}]}
    failure = serve().error(input="Go.", tools=TOOLS, tool_choice=choice)
    assert failure.param == "tool_choice.tools[0]"


def test_hosted_choice_without_the_tool_is_refused(serve: Serve) -> None:
    failure = serve().error(input="Go.", tools=TOOLS, tool_choice={"type": "web_search_preview"})
    assert (failure.param, failure.message) == (
        "tool_choice",
        "Tool choice 'web_search_preview' not found in 'tools' parameter.",
    )


def test_function_choice_without_a_name_is_refused(serve: Serve) -> None:
    failure = serve().error(input="Go.", tools=TOOLS, tool_choice={"type": "function"})
    assert (failure.code, failure.param) == ("missing_required_parameter", "tool_choice.name")


def test_parallel_off_means_one_call_per_step(serve: Serve) -> None:
    s = serve(policy=DefaultPolicy(tool_calls=3, parallel=2))
    assert len(calls(s.create(input=ALL, tools=TOOLS))) == 2
    response = s.create(input=ALL, tools=TOOLS, parallel_tool_calls=False)
    assert len(calls(response)) == 1
    assert response.parallel_tool_calls is False


def test_parallel_off_trims_a_scripted_step(serve: Serve) -> None:
    step = CallStep(
        calls=(
            FunctionCallSpec(name="alpha", arguments='{"q": "1"}'),
            FunctionCallSpec(name="beta", arguments='{"q": "2"}'),
        )
    )
    s = serve(policy=ScriptedPolicy([step]))
    response = s.create(input="Go.", tools=TOOLS, parallel_tool_calls=False)
    assert [c.name for c in calls(response)] == ["alpha"]


def test_max_tool_calls_bounds_the_calls_of_a_response(serve: Serve) -> None:
    s = serve(policy=DefaultPolicy(tool_calls=3, parallel=3))
    response = s.create(input=ALL, tools=TOOLS, max_tool_calls=2)
    assert len(calls(response)) == 2
    assert response.max_tool_calls == 2


def test_max_tool_calls_counts_hosted_calls(serve: Serve) -> None:
    s = serve(policy=DefaultPolicy(tool_calls=3))
    response = s.create(input="News?", tools=[*TOOLS, SEARCH], max_tool_calls=1)
    assert kinds(response) == ["web_search_call", "message"]
    assert kinds(s.create(input="News?", tools=[*TOOLS, SEARCH], max_tool_calls=0)) == ["message"]
