# How the default model works as the root of a multi-agent response (rollout.engine.agents):
# a prompt with parallel parts (two or more files to read, tests to run) gets one subagent per
# part (spawn_agent), a wait for all of them (wait_agent), and an answer made of what each said.
# A prompt without such parts is answered as in a single-agent response. The subagents
# themselves are default models working on their task. Reads only the context.
from __future__ import annotations

import re

import orjson

from protocol.agentitems import MultiAgentCall, MultiAgentCallOutput, output_text
from protocol.items import Message
from rollout.conversation.calls import AgentCallSpec
from rollout.conversation.context import Context
from rollout.model.steps import CallStep, Step, TextStep

MAX_PARTS = 6  # subagents the default model spawns at most (the default limit)
_EXT = r"(?:py|pyi|js|ts|tsx|go|rs|rb|java|c|h|cc|cpp|sh|md|rst|txt|json|toml|yaml|yml|cfg|ini)"
_FILE = re.compile(rf"(?<![\w/.-])[\w][\w./-]*\.{_EXT}\b")
_TEST = re.compile(r"(?<![\w/.-])(?:tests?/[\w./-]+|test_\w+)")


def parts(text: str) -> list[tuple[str, str]]:
    """The parallel parts of a prompt, as (agent name, task): its files (read each), else its
    tests (run each); fewer than two is no parallel work."""
    tests = list(dict.fromkeys(m.group(0) for m in _TEST.finditer(text)))
    files = [f for f in dict.fromkeys(m.group(0) for m in _FILE.finditer(text)) if f not in tests]
    if len(files) >= 2:
        return [
            (f"reader_{i + 1}", f"Read {f} and say what it does.") for i, f in enumerate(files)
        ][:MAX_PARTS]
    if len(tests) >= 2:
        return [
            (f"tester_{i + 1}", f"Run {t} and report the result.") for i, t in enumerate(tests)
        ][:MAX_PARTS]
    return []


def _since_user(ctx: Context) -> list[object]:
    for i in range(len(ctx.items) - 1, -1, -1):
        item = ctx.items[i]
        if isinstance(item, Message) and item.role == "user":
            return list(ctx.items[i + 1 :])
    return list(ctx.items)


def _action(action: str, arguments: dict[str, object]) -> AgentCallSpec:
    return AgentCallSpec(action=action, arguments=orjson.dumps(arguments).decode())


def orchestrate(ctx: Context) -> Step | None:
    """The root's next step in a multi-agent response, or None to work alone."""
    turn = _since_user(ctx)
    spawned = [
        orjson.loads(i.arguments).get("agent_name")
        for i in turn
        if isinstance(i, MultiAgentCall) and i.action == "spawn_agent"
    ]
    if not spawned:
        found = parts(ctx.last_user_text)
        if not found:
            return None
        calls = tuple(_action("spawn_agent", {"agent_name": n, "message": t}) for n, t in found)
        return CallStep(calls=calls, text=f"I'll split this into {len(found)} parallel tasks.")
    waits = [i for i in turn if isinstance(i, MultiAgentCallOutput) and i.action == "wait_agent"]
    if not waits:
        return CallStep(calls=(_action("wait_agent", {"targets": spawned}),))
    try:
        results = orjson.loads(output_text(waits[-1]))
    except orjson.JSONDecodeError:
        results = {}
    lines = [
        f"- {name}: {(r.get('answer') or r.get('status', '')).strip()}"
        for name, r in results.items()
        if isinstance(r, dict)
    ]
    return TextStep(text="Here is what the agents found:\n" + "\n".join(lines))
