# End to end with `openai-agents`: an Agent with a function tool and a structured `output_type`
# run against a ServerThread over HTTP and over the SDK's Responses WebSocket transport, with a
# scripted model (one tool call, then the answer, which the model gives in the agent's JSON
# schema). The agent runs on asyncio in the test's own thread; tracing is off (it would export).
from __future__ import annotations

import asyncio

import openai
import pydantic
import pytest

agents = pytest.importorskip("agents")

from agents import Agent, RunConfig, Runner, function_tool  # noqa: E402
from agents.models.openai_provider import OpenAIProvider  # noqa: E402

from rollout import (  # noqa: E402
    DefaultPolicy,
    Engine,
    ScriptedPolicy,
    ServerConfig,
    ServerThread,
    call,
)
from rollout.service.capture import Captured  # noqa: E402
from rollout.service.service import Service  # noqa: E402


class Forecast(pydantic.BaseModel):
    city: str
    celsius: float
    summary: str


@pytest.mark.parametrize("transport", ["http", "ws"])
def test_agent_with_a_tool_and_structured_output(transport: str) -> None:
    seen: list[str] = []

    @function_tool
    def get_weather(city: str) -> str:
        """The current weather of a city."""
        seen.append(city)
        return f"{city}: 18C, light rain"

    engine = Engine(policy=ScriptedPolicy([call("get_weather", {"city": "Paris"})]))
    captured: list[Captured] = []
    service = Service(engine, ServerConfig())
    service.taps.captured = captured
    with ServerThread(service=service) as server:
        provider = OpenAIProvider(
            api_key="test",
            base_url=server.http_base_url,
            use_responses=True,
            use_responses_websocket=transport == "ws",
        )
        agent = Agent(
            name="forecaster",
            instructions="Look the weather up, then answer with a forecast.",
            model="gpt-test",
            tools=[get_weather],
            output_type=Forecast,
        )
        config = RunConfig(model_provider=provider, tracing_disabled=True)

        async def main() -> object:
            result = await Runner.run(agent, "What is the weather in Paris?", run_config=config)
            return result.final_output

        output = asyncio.run(main())
        assert server.engine.stats.billed == 2
    assert seen == ["Paris"]
    assert isinstance(output, Forecast)
    creates = [c for c in captured if c.kind in ("POST /v1/responses", "response.create")]
    assert {c.transport for c in creates} == {transport} and len(creates) == 2
    assert creates[0].body["text"]["format"]["type"] == "json_schema"


def _run(agent: Agent, prompt: str, server: ServerThread, transport: str) -> str:
    async def main() -> str:
        # A client of this event loop (the provider's shared one belongs to an earlier loop).
        client = openai.AsyncOpenAI(api_key="test", base_url=server.http_base_url)
        provider = OpenAIProvider(
            openai_client=client, use_responses=True, use_responses_websocket=transport == "ws"
        )
        config = RunConfig(model_provider=provider, tracing_disabled=True)
        result = await Runner.run(agent, prompt, run_config=config)
        await client.close()
        return str(result.final_output)

    return asyncio.run(main())


@pytest.mark.parametrize("transport", ["http", "ws"])
def test_default_model_picks_the_relevant_tool_with_values_from_the_prompt(
    transport: str,
) -> None:
    seen: list[tuple[str, str]] = []

    @function_tool
    def ask_user(question: str) -> str:
        """Ask the user a clarifying question and wait for the answer."""
        seen.append(("ask_user", question))
        return "no answer"

    @function_tool
    def create_plan(steps: list[str]) -> str:
        """Create a plan with the given steps."""
        seen.append(("create_plan", ",".join(steps)))
        return "planned"

    @function_tool
    def get_weather(city: str) -> str:
        """The current weather of a city."""
        seen.append(("get_weather", city))
        return f"{city}: 3C, light snow"

    agent = Agent(
        name="assistant",
        instructions="Help the user.",
        model="gpt-test",
        tools=[ask_user, create_plan, get_weather],
    )
    with ServerThread(Engine(policy=DefaultPolicy())) as server:
        output = _run(agent, "What's the weather in Kyiv right now?", server, transport)
    assert seen == [("get_weather", "Kyiv")]  # once: the same call is not made again
    assert "Kyiv: 3C, light snow" in output


def test_default_model_runs_shell_commands_for_a_coding_prompt() -> None:
    commands: list[str] = []
    listing = {"ls": "README.md\npyproject.toml\nsrc/\n", "find": "./README.md\n./src/app.py\n"}

    @function_tool
    def ask_human(question: str) -> str:
        """Ask a human for help."""
        raise AssertionError("not asked")

    @function_tool
    def run_shell(command: str) -> str:
        """Run a shell command in the project and return its output."""
        commands.append(command)
        return next((v for k, v in listing.items() if command.startswith(k)), "# Demo\n")

    agent = Agent(
        name="coder", instructions="You are a coding agent.", model="gpt-test",
        tools=[ask_human, run_shell],
    )  # fmt: skip
    with ServerThread(Engine(policy=DefaultPolicy())) as server:
        output = _run(agent, "List the files in this project.", server, "http")
    assert [c.split()[0] for c in commands] == ["ls", "find", "sed"]
    assert "README.md" in output and "src/app.py" in output
