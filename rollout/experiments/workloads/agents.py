# A fleet of agents for one shared server (`rollout compare --agents N`): N scenarios of one
# workload that share the instructions and tool definitions (a prefix a prefix cache can share
# across agents) but each with its own task in its first message, its own script (tool choices,
# arguments, commentary, reasoning tokens) and its own tool outputs and latencies, all a function
# of the fleet's seed and the agent's index, so every shape replays the same rollouts. One policy
# serves them all: it finds the agent from the conversation and plays that agent's script.
from __future__ import annotations

import random
import re
from typing import Any

import attrs

from rollout.conversation.context import Context
from rollout.experiments.workloads.catalog import (
    Scenario,
    Workload,
    client_tools,
    history_items,
    script_of,
)
from rollout.experiments.workloads.text import text_of_bytes
from rollout.experiments.workloads.tooldefs import tool_defs
from rollout.model.args import generate_arguments
from rollout.model.policy import ErrorStep, ScriptedPolicy, Step, TextStep, sentence

_REPOS = (
    "django/django",
    "sympy/sympy",
    "astropy/astropy",
    "scikit-learn/scikit-learn",
    "matplotlib/matplotlib",
    "sphinx-doc/sphinx",
    "pytest-dev/pytest",
    "psf/requests",
    "pydata/xarray",
    "pylint-dev/pylint",
)
_TASK = re.compile(r"Task (\d+): ")
ISSUE_TOKENS = (120, 420)  # the issue text of a task (SWE-bench problem statements are short)
ARGUMENT_POOL = 32  # arguments generated per tool, once per fleet (generating costs ~1 ms each)


def agent_seed(seed: int, agent: int) -> int:
    """The seed of agent `agent` of the fleet built with `seed` (its outputs and latencies)."""
    return seed * 1_000_000 + agent


def task_message(w: Workload, agent: int, rng: random.Random) -> str:
    """Agent `agent`'s first message: its task number, an issue of a repository, the brief."""
    repo = _REPOS[rng.randrange(len(_REPOS))]
    issue = rng.randint(1_000, 30_000)
    body = sentence(rng, rng.randint(*ISSUE_TOKENS))
    return f"Task {agent}: {repo}#{issue}. {w.first_message}\n\n{body}"


@attrs.frozen
class Fleet:
    """One scenario per agent, and the policy that plays agent i's script in agent i's context."""

    scenarios: tuple[Scenario, ...]
    final: str = "Done."

    def policy(self) -> ScriptedPolicy:
        return ScriptedPolicy(steps=self.step, final=self.final)

    def agent_of(self, ctx: Context) -> int | None:
        """The agent whose conversation `ctx` is: its latest user message is the agent's task."""
        text = ctx.last_user_text
        found = _TASK.match(text)
        if found is None:
            return None
        agent = int(found.group(1))
        if agent >= len(self.scenarios):
            return None
        first = self.scenarios[agent].request["input"][-1]["content"]
        return agent if text == first else None

    def step(self, ctx: Context) -> Step:
        agent = self.agent_of(ctx)
        if agent is None:
            return ErrorStep(message="The conversation is no task of this fleet of agents.")
        s = self.scenarios[agent]
        k = ctx.model_turns - s.history_turns
        return s.script[k] if k < len(s.script) else TextStep(text=self.final)


def fleet(w: Workload, agents: int, seed: int = 0, calls: int | None = None) -> Fleet:
    """`agents` agents of workload `w`; `calls` overrides the tool calls of every agent (a sweep
    over turns per rollout keeps each agent's first steps: the same draws in the same order)."""
    shared = random.Random(f"{w.name}:fleet:{seed}")
    tools = tool_defs(shared, w.tool_defs_bytes)
    instructions = text_of_bytes(shared, w.instructions_bytes)
    pool = {
        t["name"]: [generate_arguments(t["parameters"], shared) for _ in range(ARGUMENT_POOL)]
        for t in tools
    }

    def pick(tool: dict[str, Any], rng: random.Random) -> dict[str, Any]:
        return dict(pool[tool["name"]][rng.randrange(ARGUMENT_POOL)])

    scenarios = []
    for agent in range(agents):
        own = agent_seed(seed, agent)
        rng = random.Random(f"{w.name}:{own}")
        n = rng.randint(*w.tool_calls)
        n = n if calls is None else calls
        first = history_items(rng, w.history_tokens)
        first.append({"role": "user", "content": task_message(w, agent, rng)})
        request: dict[str, Any] = {
            "model": w.model,
            "instructions": instructions,
            "tools": tools,
            "input": first,
        }
        if w.reasoning_tokens is not None:  # as Codex does: reasoning comes back
            request["include"] = ["reasoning.encrypted_content"]
        scenarios.append(
            Scenario(
                workload=w,
                seed=own,
                request=request,
                script=tuple(script_of(w, rng, tools, n, pick)),
                tools=client_tools(w, own, tools),
                calls=n,
                history_turns=sum(1 for item in first if item["role"] == "assistant"),
            )
        )
    return Fleet(scenarios=tuple(scenarios))
