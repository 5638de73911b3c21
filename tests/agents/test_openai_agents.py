# End to end with `openai-agents`: an Agent with a function tool and a structured `output_type`
# run against a ServerThread over HTTP and over the SDK's Responses WebSocket transport, with a
# scripted model (one tool call, then the answer, which the model gives in the agent's JSON
# schema). The agent runs on asyncio in the test's own thread; tracing is off (it would export).
from __future__ import annotations

import asyncio

import pydantic
import pytest

agents = pytest.importorskip("agents")

from agents.models.openai_provider import OpenAIProvider  # noqa: E402

from agents import Agent, RunConfig, Runner, function_tool  # noqa: E402
from rollout import Engine, ScriptedPolicy, ServerConfig, ServerThread, call  # noqa: E402
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
