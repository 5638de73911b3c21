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
from rollout.conversation.tokens import count
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
    )
}

_TOOL_NAMES: tuple[tuple[str, dict[str, Any], list[str]], ...] = (
    (
        "shell",
        {
            "command": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "workdir": {"type": "string"},
            "timeout_ms": {"type": "integer", "minimum": 100, "maximum": 600000},
        },
        ["command"],
    ),
    ("apply_patch", {"input": {"type": "string", "minLength": 10}}, ["input"]),
    (
        "read_file",
        {
            "path": {"type": "string"},
            "offset": {"type": "integer", "minimum": 0},
            "limit": {"type": "integer", "minimum": 1, "maximum": 2000},
        },
        ["path"],
    ),
    (
        "list_dir",
        {"path": {"type": "string"}, "depth": {"type": "integer", "minimum": 1, "maximum": 5}},
        ["path"],
    ),
    (
        "grep",
        {
            "pattern": {"type": "string", "minLength": 1},
            "path": {"type": "string"},
            "ignore_case": {"type": "boolean"},
        },
        ["pattern"],
    ),
    (
        "update_plan",
        {
            "steps": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "step": {"type": "string"},
                        "status": {
                            "type": "string",
                            "enum": ["pending", "in_progress", "completed"],
                        },
                    },
                    "required": ["step", "status"],
                    "additionalProperties": False,
                },
            }
        },
        ["steps"],
    ),
    ("run_tests", {"path": {"type": "string"}, "keyword": {"type": "string"}}, []),
    ("git_diff", {"path": {"type": "string"}, "staged": {"type": "boolean"}}, []),
    ("web_fetch", {"url": {"type": "string", "format": "uri"}}, ["url"]),
    (
        "write_file",
        {"path": {"type": "string"}, "content": {"type": "string"}},
        ["path", "content"],
    ),
    (
        "search_code",
        {
            "query": {"type": "string"},
            "max_results": {"type": "integer", "minimum": 1, "maximum": 50},
        },
        ["query"],
    ),
    ("view_image", {"path": {"type": "string"}}, ["path"]),
)


def _text_of_bytes(rng: random.Random, size: int) -> str:
    out: list[str] = []
    total = 0
    while total < size:
        s = sentence(rng, rng.randint(8, 24))
        out.append(s)
        total += len(s) + 1
    return " ".join(out)[:size]


def _tool_defs(rng: random.Random, size: int) -> list[dict[str, Any]]:
    """Function tools whose JSON totals about `size` bytes (long descriptions, real schemas)."""
    tools = []
    count = min(len(_TOOL_NAMES), max(2, size // 1500))
    for name, props_, required in _TOOL_NAMES[:count]:
        # `call` numbers the calls of a session, so each call's output and latency are its own.
        props = {**props_, "call": {"type": "integer", "minimum": 0}}
        tools.append(
            {
                "type": "function",
                "name": name,
                "description": "",
                "parameters": {
                    "type": "object",
                    "properties": props,
                    "required": required,
                    "additionalProperties": False,
                },
            }
        )
    base = len(orjson.dumps(tools))
    per_tool = max(40, (size - base) // len(tools))
    for tool in tools:
        tool["description"] = _text_of_bytes(rng, per_tool)
    return tools


def _history(rng: random.Random, tokens: int) -> list[dict[str, Any]]:
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
        return _text_of_tokens(rng, w.tool_output_tokens.sample(rng)), w.client_latency.sample(rng)
    return _text_of_bytes(rng, rng.randint(*w.tool_output_bytes)), w.client_latency.sample(rng)


def _text_of_tokens(rng: random.Random, tokens: int) -> str:
    """Text of about `tokens` o200k tokens (sentences; a word is about a token)."""
    out: list[str] = []
    total = 0
    while total < tokens:
        text = sentence(rng, min(rng.randint(8, 24), max(1, tokens - total - 1)))
        out.append(text)
        total += count(text) + 1
    return " ".join(out)


def _build(w: Workload, seed: int, model: str) -> Scenario:
    rng = random.Random(f"{w.name}:{seed}")
    tools = _tool_defs(rng, w.tool_defs_bytes)
    calls = rng.randint(*w.tool_calls)
    script: list[Step] = []
    n = 0
    while n < calls:
        k = min(w.parallel, calls - n)
        specs = []
        for _ in range(k):
            tool = tools[rng.randrange(len(tools))]
            args = generate_arguments(tool["parameters"], rng)
            args["call"] = n
            specs.append(FunctionCallSpec(name=tool["name"], arguments=orjson.dumps(args).decode()))
            n += 1
        text = sentence(rng, rng.randint(*w.output_tokens))
        think = w.reasoning_tokens.sample(rng) if w.reasoning_tokens else None
        script.append(CallStep(calls=tuple(specs), text=text, reasoning_tokens=think))
    think = w.reasoning_tokens.sample(rng) if w.reasoning_tokens else None
    answer = sentence(rng, rng.randint(*w.output_tokens))
    script.append(TextStep(text=answer, reasoning_tokens=think))
    first: list[dict[str, Any]] = [*_history(rng, w.history_tokens)] if w.history_tokens else []
    first.append({"role": "user", "content": w.first_message})
    request: dict[str, Any] = {
        "model": model,
        "instructions": _text_of_bytes(rng, w.instructions_bytes),
        "tools": tools,
        "input": first,
    }
    if w.reasoning_tokens is not None:  # as Codex does: reasoning comes back with the history
        request["include"] = ["reasoning.encrypted_content"]

    def make_tool(name: str) -> Tool:
        async def tool(args: dict[str, Any]) -> str:
            key = orjson.dumps(args, option=orjson.OPT_SORT_KEYS).decode()
            text, latency = _output(name, key, seed, w)
            if latency > 0:
                await trio.sleep(latency)  # the client's tool at work: declared by the workload
            return text

        return tool

    return Scenario(
        workload=w,
        seed=seed,
        request=request,
        script=tuple(script),
        tools={t["name"]: make_tool(t["name"]) for t in tools},
        calls=calls,
        history_turns=sum(1 for item in first if item["role"] == "assistant"),
    )


def workload(name: str) -> Workload:
    try:
        return WORKLOADS[name]
    except KeyError:
        raise ValueError(f"unknown workload {name!r} (known: {', '.join(WORKLOADS)})") from None
