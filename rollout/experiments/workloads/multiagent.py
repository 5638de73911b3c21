# The multi-agent workload of `rollout compare --multi-agent`: a root agent that spawns K
# subagents, each of which makes T client tool calls and answers, then the root answers from
# their results. One definition (MultiAgent) gives every shape its model steps, so that they run
# the same ones:
# - hosted: the per-agent script of a multi-agent response (`hosted_script`: the root spawns and
#   waits for its subagents inside one response; each subagent's calls go to the client);
# - client-orchestrated: K + 1 conversations whose steps a dispatching ScriptedPolicy plays
#   (`client_policy`): the root calls the client's `spawn_agent` and `wait_agent` tools, each
#   subagent is a conversation of its own, told apart by its task (its one user message).
# Every subagent's prompt is what the hosted shape gives it: the root's instructions and its
# task, with the subagents' client tool.
# In both the root takes 3 steps (spawn, wait, answer) and each subagent T + 1.
from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import attrs
import orjson
import trio

from rollout.conversation.calls import FunctionCallSpec
from rollout.conversation.context import Context
from rollout.experiments.workloads.catalog import Latency
from rollout.experiments.workloads.text import text_of_bytes
from rollout.model.policy import CallStep, ScriptedPolicy, Step, TextStep, sentence

Tool = Callable[[dict[str, Any]], Awaitable[str]]

#: The client tool every subagent calls, and the root's tools when the client orchestrates.
READ_FILE = {
    "type": "function",
    "name": "read_file",
    "description": "Read a file of the repository and return its text.",
    "parameters": {
        "type": "object",
        "properties": {"path": {"type": "string", "description": "the file's path"}},
        "required": ["path"],
        "additionalProperties": False,
    },
}
SPAWN_AGENT = {
    "type": "function",
    "name": "spawn_agent",
    "description": "Start a subagent on a task; it works while you go on.",
    "parameters": {
        "type": "object",
        "properties": {
            "agent": {"type": "string", "description": "the subagent's name"},
            "task": {"type": "string", "description": "what it is to do"},
        },
        "required": ["agent", "task"],
        "additionalProperties": False,
    },
}
WAIT_AGENT = {
    "type": "function",
    "name": "wait_agent",
    "description": "Wait for subagents to finish; returns each one's answer by name.",
    "parameters": {
        "type": "object",
        "properties": {"agents": {"type": "array", "items": {"type": "string"}}},
        "required": ["agents"],
        "additionalProperties": False,
    },
}


@attrs.frozen(kw_only=True)
class MultiAgent:
    """A root and `agents` subagents, each making `calls` client tool calls (one a step)."""

    agents: int
    calls: int = 3
    instructions_bytes: int = 4_000  # the root's, which every subagent shares
    tool_output_bytes: int = 2_000
    answer_tokens: tuple[int, int] = (30, 60)  # each subagent's answer and the root's
    client_latency: Latency = attrs.field(factory=lambda: Latency(kind="fixed", a=0.05))
    model: str = "sim-1"
    seed: int = 0

    name = "multi-agent"

    def describe(self) -> str:
        return (
            f"a root agent spawns K subagents; each reads {self.calls} file(s) "
            f"(a client tool call a step, {self.tool_output_bytes:,} B outputs, "
            f"{self.client_latency.describe()} each) and answers in "
            f"{self.answer_tokens[0]}-{self.answer_tokens[1]} tokens; the root waits for them and "
            "answers from their results"
        )

    @property
    def model_steps(self) -> int:
        """Sampling steps in every shape: the root's 3 and each subagent's calls and answer."""
        return 3 + self.agents * (self.calls + 1)

    def build(self) -> MultiScenario:
        return _build(self)


@attrs.frozen(kw_only=True)
class Agent:
    name: str
    task: str
    steps: tuple[Step, ...]  # its calls (one a step), then its answer


@attrs.frozen(kw_only=True)
class MultiScenario:
    workload: MultiAgent
    task: str  # the root's user message
    root_instructions: str
    agents: tuple[Agent, ...]
    answer: str  # the root's final answer
    tools: dict[str, Tool]  # the client's (read_file)

    @property
    def names(self) -> list[str]:
        return [a.name for a in self.agents]

    def root_request(self) -> dict[str, Any]:
        """The root's first create body when the client orchestrates (no `store`: the shape
        sets it)."""
        return {
            "model": self.workload.model,
            "instructions": self.root_instructions,
            "tools": [SPAWN_AGENT, WAIT_AGENT],
            "input": [{"role": "user", "content": self.task}],
        }

    def agent_request(self, agent: Agent) -> dict[str, Any]:
        """A subagent's first create body when the client orchestrates."""
        return {
            "model": self.workload.model,
            "instructions": self.root_instructions,
            "tools": [READ_FILE],
            "input": [{"role": "user", "content": agent.task}],
        }

    def hosted_request(self) -> dict[str, Any]:
        """The one create of the hosted shape: the root's prompt, the subagents' client tool,
        multi_agent enabled with room for every subagent at once."""
        return {
            "model": self.workload.model,
            "instructions": self.root_instructions,
            "tools": [READ_FILE],
            "input": [{"role": "user", "content": self.task}],
            "multi_agent": {"enabled": True, "max_concurrent_subagents": len(self.agents)},
        }

    def root_steps(self) -> list[Step]:
        """The root's steps when the client orchestrates: spawn every subagent (one step, a
        call each), wait for them all, answer."""
        spawn = tuple(
            FunctionCallSpec(name="spawn_agent", arguments=_json({"agent": a.name, "task": a.task}))
            for a in self.agents
        )
        wait = FunctionCallSpec(name="wait_agent", arguments=_json({"agents": self.names}))
        return [CallStep(calls=spawn), CallStep(calls=(wait,)), TextStep(text=self.answer)]

    def client_policy(self) -> ScriptedPolicy:
        """The model of the client-orchestrated shapes: each conversation's steps, by its one
        user message (the root's task, or a subagent's)."""
        by_task: dict[str, list[Step]] = {a.task: list(a.steps) for a in self.agents}
        by_task[self.task] = self.root_steps()

        def next_step(ctx: Context) -> Step:
            steps = by_task.get(ctx.last_user_text)
            if steps is None or ctx.model_turns >= len(steps):
                return TextStep(text="Done.")
            return steps[ctx.model_turns]

        return ScriptedPolicy(next_step)

    def hosted_script(self) -> dict[str, Any]:
        """The per-agent script of the hosted shape (`rollout serve --script`'s multi-agent
        form): the root's spawn, wait and answer; each subagent's calls and answer."""
        return {
            "steps": [
                {"spawn": [{"agent": a.name, "task": a.task} for a in self.agents]},
                {"wait": self.names},
                {"text": self.answer},
            ],
            "agents": {a.name: [_step_data(s) for s in a.steps] for a in self.agents},
            "final": "Done.",
        }

    def results_text(self, answers: Mapping[str, str]) -> str:
        """wait_agent's output when the client orchestrates: each subagent's answer by name."""
        return _json({name: answers[name] for name in self.names})


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _step_data(step: Step) -> dict[str, Any]:
    if isinstance(step, CallStep):
        (spec,) = step.calls
        assert isinstance(spec, FunctionCallSpec)
        return {"call": spec.name, "arguments": orjson.loads(spec.arguments)}
    assert isinstance(step, TextStep)
    return {"text": step.text}


def _build(w: MultiAgent) -> MultiScenario:
    rng = random.Random(f"{w.name}:{w.seed}")
    root_instructions = "You lead a team of subagents. " + text_of_bytes(rng, w.instructions_bytes)
    agents = []
    for i in range(w.agents):
        name = f"reader_{i + 1}"
        calls: list[Step] = [
            CallStep(
                calls=(
                    FunctionCallSpec(
                        name="read_file", arguments=_json({"path": f"src/part_{i + 1}_{j + 1}.py"})
                    ),
                )
            )
            for j in range(w.calls)
        ]
        answer = TextStep(text=sentence(rng, rng.randint(*w.answer_tokens)))
        agents.append(
            Agent(
                name=name,
                task=f"Read the files of part {i + 1} and summarize what they do.",
                steps=(*calls, answer),
            )
        )
    return MultiScenario(
        workload=w,
        task=f"Summarize the repository's {w.agents} part(s), one subagent a part.",
        root_instructions=root_instructions,
        agents=tuple(agents),
        answer=sentence(rng, rng.randint(*w.answer_tokens)),
        tools={"read_file": _read_file(w)},
    )


def _read_file(w: MultiAgent) -> Tool:
    """The client's read_file: text of the workload's size, a function of the path and seed,
    after the workload's declared latency."""

    async def read_file(args: dict[str, Any]) -> str:
        rng = random.Random(f"{w.seed}:{args.get('path')}")
        latency = w.client_latency.sample(rng)
        if latency > 0:
            await trio.sleep(latency)  # the client's tool at work: declared by the workload
        return text_of_bytes(rng, w.tool_output_bytes)

    return read_file
