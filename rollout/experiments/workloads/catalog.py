# Named, parameterized workloads for experiments: the first request (instructions, tool
# definitions, first message, optional prior history), the model's script (tool calls with
# commentary, then an answer) and the client's tools (output sizes, latency). Everything is derived
# from the workload and a seed, so every mode replays exactly the same rollout.
from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Awaitable, Callable
from typing import Any, Literal

import attrs
import orjson
import trio

from rollout.conversation.calls import FunctionCallSpec
from rollout.experiments.workloads.text import text_of_bytes, text_of_tokens, words_of_tokens
from rollout.experiments.workloads.tooldefs import tool_defs
from rollout.model.args import generate_arguments
from rollout.model.policy import CallStep, ScriptedPolicy, Step, TextStep, sentence


@attrs.frozen(kw_only=True)
class Latency:
    """Client tool latency: fixed, uniform(low, high) or lognormal(median, sigma), seconds."""

    kind: Literal["fixed", "uniform", "lognormal"] = "fixed"
    a: float = 0.0
    b: float = 0.0

    def sample(self, rng: random.Random) -> float:
        if self.kind == "fixed":
            return self.a
        if self.kind == "uniform":
            return rng.uniform(self.a, self.b)
        return rng.lognormvariate(_ln(self.a), self.b)

    def describe(self) -> str:
        if self.kind == "fixed":
            return f"{self.a * 1000:g} ms"
        if self.kind == "uniform":
            return f"uniform {self.a * 1000:g}-{self.b * 1000:g} ms"
        return f"lognormal median {self.a * 1000:g} ms, sigma {self.b:g}"


def _ln(x: float) -> float:
    return math.log(x) if x > 0 else -50.0


@attrs.frozen(kw_only=True)
class Dist:
    """A declared distribution of whole numbers (tokens): lognormal(median, sigma) clipped to
    [low, high], drawn per step or per call."""

    median: float
    sigma: float = 0.0
    low: int = 0
    high: int = 1_000_000

    def sample(self, rng: random.Random) -> int:
        value = self.median if self.sigma == 0 else rng.lognormvariate(_ln(self.median), self.sigma)
        return max(self.low, min(self.high, round(value)))

    def describe(self) -> str:
        return f"lognormal median {self.median:g}, sigma {self.sigma:g}, in {self.low}-{self.high}"


@attrs.frozen(kw_only=True)
class Workload:
    name: str
    description: str
    tool_calls: tuple[int, int]  # inclusive range, drawn per rollout
    instructions_bytes: int
    tool_defs_bytes: int
    first_message: str
    tool_output_bytes: tuple[int, int]
    output_tokens: tuple[int, int]  # per model step (commentary before calls, or the answer)
    client_latency: Latency = Latency()
    parallel: int = 1
    history_tokens: int = 0  # prior conversation sent with the first request
    tool_output_tokens: Dist | None = None  # drawn per call (instead of tool_output_bytes)
    reasoning_tokens: Dist | None = None  # drawn per step; needs a reasoning `model`
    model: str = "sim-1"
    source: str = ""  # where the workload's figures come from (docs/experiments.md)
    # Tool output text: sentences counted by the tokenizer, or one-token words (no counting:
    # cheap enough for fleets of agents; rollout.experiments.workloads.text).
    tool_text: Literal["sentences", "words"] = "sentences"

    def build(self, seed: int = 0, model: str | None = None) -> Scenario:
        return _build(self, seed, model or self.model)


Tool = Callable[[dict[str, Any]], Awaitable[str]]


@attrs.frozen(kw_only=True)
class Scenario:
    workload: Workload
    seed: int
    request: dict[str, Any]  # the first create body
    script: tuple[Step, ...]
    tools: dict[str, Tool]
    calls: int
    history_turns: int = 0  # assistant turns in the prior history (the script starts after them)

    def policy(self) -> ScriptedPolicy:
        """The model of this scenario: its script, positioned after the prior history."""
        return ScriptedPolicy(list(self.script), first_turn=self.history_turns)


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload(
            name="coding-agent",
            description="a coding agent: ~18 KB instructions, ~19 KB tool definitions, tool "
            "outputs 0.2-4 KB, 50-300 output tokens per step",
            tool_calls=(20, 30),
            instructions_bytes=18_000,
            tool_defs_bytes=19_000,
            first_message="The test suite fails in tests/test_parser.py; find the bug and fix it.",
            tool_output_bytes=(200, 4000),
            output_tokens=(50, 300),
            client_latency=Latency(kind="uniform", a=0.005, b=0.050),
        ),
        Workload(
            name="chat",
            description="a chat assistant: short instructions, short answers",
            tool_calls=(2, 2),
            instructions_bytes=1_000,
            tool_defs_bytes=1_500,
            first_message="What is the weather in Paris and in Rome right now?",
            tool_output_bytes=(100, 400),
            output_tokens=(20, 80),
            client_latency=Latency(kind="fixed", a=0.010),
        ),
        Workload(
            name="long",
            description="a long session: 100k tokens of prior history",
            tool_calls=(5, 5),
            instructions_bytes=18_000,
            tool_defs_bytes=19_000,
            first_message="Given everything above, finish the migration.",
            tool_output_bytes=(500, 2000),
            output_tokens=(50, 200),
            client_latency=Latency(kind="uniform", a=0.005, b=0.050),
            history_tokens=100_000,
        ),
        Workload(
            name="agentx-long",
            description="a long coding session: the prompt growing to ~142K tokens, ~444 "
            "output tokens per turn (reasoning included)",
            source="vLLM AgentX traces as quoted in vLLM RFC #57103: median 43 turns, ~142K "
            "input and ~444 output tokens, >96% prefix-cache hits",
            tool_calls=(42, 42),
            instructions_bytes=24_000,
            tool_defs_bytes=19_000,
            first_message="The integration tests fail after the dependency upgrade; find out "
            "why and fix it.",
            tool_output_bytes=(0, 0),
            tool_output_tokens=Dist(median=2_560, sigma=0.7, low=60, high=12_000),
            output_tokens=(60, 160),
            reasoning_tokens=Dist(median=230, sigma=0.6, low=16, high=2_000),
            client_latency=Latency(kind="lognormal", a=0.150, b=0.8),
            model="gpt-5.1-codex",
        ),
        Workload(
            name="swe-pro-codex",
            description="a SWE-bench-Pro-like Codex session: the prompt growing to ~80K "
            "tokens by turn 30, input:output about 131:1",
            source="SWE-bench Pro runs of Codex: ~80K tokens of context by turn 30, "
            "input:output tokens about 131:1",
            tool_calls=(29, 29),
            instructions_bytes=17_000,
            tool_defs_bytes=19_000,
            first_message="Fix the failing test in tests/test_parser.py without breaking the "
            "others.",
            tool_output_bytes=(0, 0),
            tool_output_tokens=Dist(median=1_330, sigma=0.8, low=40, high=10_000),
            output_tokens=(20, 80),
            reasoning_tokens=Dist(median=270, sigma=0.7, low=16, high=1_500),
            client_latency=Latency(kind="lognormal", a=0.200, b=0.8),
            model="gpt-5.1-codex",
        ),
        Workload(
            name="swe-agents",
            description="a SWE-bench agent, one of a fleet sharing a server (mini-swe-agent / "
            "SWE-agent style): ~2.5K tokens of shared instructions and three tools, one tool call "
            "a step, the context growing to ~20-40K tokens with tool outputs; visible output is "
            "8-30 tokens a step (each one streamed event), the thinking hidden reasoning tokens "
            "(median 150) of a reasoning model",
            source="turns: 20-40 tool calls (thoughtworks/agentic-coding-trajectories, 15K "
            "SWE-agent/OpenHands sessions: p50 36 turns, p50 deepest prompt 23,840 tokens); tool "
            "latency: Continuum (arXiv 2511.02230, Fig. 3 and its release) on SWE-Bench: tool "
            "calls from milliseconds to tens of seconds, pinned when expected under 2 s; here "
            "lognormal median 0.5 s, sigma 1.5 (82% under 2 s, p99 ~16 s)",
            tool_calls=(20, 40),
            instructions_bytes=8_000,
            tool_defs_bytes=4_500,
            first_message="Resolve the issue below in the repository checked out at /testbed.",
            tool_output_bytes=(0, 0),
            tool_output_tokens=Dist(median=400, sigma=0.9, low=20, high=6_000),
            output_tokens=(8, 30),
            reasoning_tokens=Dist(median=150, sigma=0.6, low=16, high=1_000),
            client_latency=Latency(kind="lognormal", a=0.5, b=1.5),
            model="gpt-5.1-codex",
            tool_text="words",
        ),
    )
}


def history_items(rng: random.Random, tokens: int) -> list[dict[str, Any]]:
    """Prior turns of about `tokens` tokens (one word is about one token)."""
    items: list[dict[str, Any]] = []
    words = 0
    while words < tokens:
        n = rng.randint(200, 800)
        role = "user" if len(items) % 2 == 0 else "assistant"
        items.append({"role": role, "content": sentence(rng, n)})
        words += n + 6
    return items


def _output(name: str, arguments: str, seed: int, w: Workload) -> tuple[str, float]:
    """A call's output text and latency: a function of the call alone (same in every mode)."""
    rng = random.Random(hashlib.sha256(f"{seed}:{name}:{arguments}".encode()).digest())
    if w.tool_output_tokens is not None:
        make = words_of_tokens if w.tool_text == "words" else text_of_tokens
        return make(rng, w.tool_output_tokens.sample(rng)), w.client_latency.sample(rng)
    return text_of_bytes(rng, rng.randint(*w.tool_output_bytes)), w.client_latency.sample(rng)


Arguments = Callable[[dict[str, Any], random.Random], dict[str, Any]]


def _generated(tool: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    return generate_arguments(tool["parameters"], rng)


def script_of(
    w: Workload,
    rng: random.Random,
    tools: list[dict[str, Any]],
    calls: int,
    arguments: Arguments = _generated,
) -> list[Step]:
    """The model's steps: `calls` tool calls (`parallel` a step, each step with commentary and
    its reasoning tokens), then an answer; call n carries `"call": n` in its arguments (a fresh
    dict from `arguments`, generated for the tool's schema unless given)."""
    script: list[Step] = []
    n = 0
    while n < calls:
        k = min(w.parallel, calls - n)
        specs = []
        for _ in range(k):
            tool = tools[rng.randrange(len(tools))]
            args = arguments(tool, rng)
            args["call"] = n
            specs.append(FunctionCallSpec(name=tool["name"], arguments=orjson.dumps(args).decode()))
            n += 1
        text = sentence(rng, rng.randint(*w.output_tokens))
        think = w.reasoning_tokens.sample(rng) if w.reasoning_tokens else None
        script.append(CallStep(calls=tuple(specs), text=text, reasoning_tokens=think))
    think = w.reasoning_tokens.sample(rng) if w.reasoning_tokens else None
    answer = sentence(rng, rng.randint(*w.output_tokens))
    script.append(TextStep(text=answer, reasoning_tokens=think))
    return script


def client_tools(w: Workload, seed: int, tools: list[dict[str, Any]]) -> dict[str, Tool]:
    """The client's tools, by name: each call's output and latency are a function of the seed
    and the call (`_output`), the latency slept on the current clock."""

    def make_tool(name: str) -> Tool:
        async def tool(args: dict[str, Any]) -> str:
            key = orjson.dumps(args, option=orjson.OPT_SORT_KEYS).decode()
            text, latency = _output(name, key, seed, w)
            if latency > 0:
                await trio.sleep(latency)  # the client's tool at work: declared by the workload
            return text

        return tool

    return {t["name"]: make_tool(t["name"]) for t in tools}


def _build(w: Workload, seed: int, model: str) -> Scenario:
    rng = random.Random(f"{w.name}:{seed}")
    tools = tool_defs(rng, w.tool_defs_bytes)
    calls = rng.randint(*w.tool_calls)
    script = script_of(w, rng, tools, calls)
    first = history_items(rng, w.history_tokens)
    first.append({"role": "user", "content": w.first_message})
    request: dict[str, Any] = {
        "model": model,
        "instructions": text_of_bytes(rng, w.instructions_bytes),
        "tools": tools,
        "input": first,
    }
    if w.reasoning_tokens is not None:  # as Codex does: reasoning comes back with the history
        request["include"] = ["reasoning.encrypted_content"]
    return Scenario(
        workload=w,
        seed=seed,
        request=request,
        script=tuple(script),
        tools=client_tools(w, seed, tools),
        calls=calls,
        history_turns=sum(1 for item in first if item["role"] == "assistant"),
    )


def workload(name: str) -> Workload:
    try:
        return WORKLOADS[name]
    except KeyError:
        raise ValueError(f"unknown workload {name!r} (known: {', '.join(WORKLOADS)})") from None
