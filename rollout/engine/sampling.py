# The one sampling loop. Each step, the rollout's model streams pieces (rollout.model.pieces:
# reasoning, message text, function calls and their argument deltas, hosted calls, usage, how
# the step ended) and the loop turns them into the response's events and context; the simulated
# model (a policy paced by a profile: rollout.engine.simulated) and a real engine behind the
# upstream (rollout.upstream) are two models of the one loop. Text ends the response; tool calls
# go to their executors, every one behind the same interface (`await executor.call(r, calls)`
# returns the output items that join the context, or None to end the response there); repeat.
# Shapes differ only in the client-tool executor, transports only in the Sink events go to; what
# reaches a running loop from outside (async outputs, acknowledgements, a steer) waits in its
# Mailbox for the next safe boundary. A multi-agent response's actions (spawn_agent, ...) go to
# its team (rollout.engine.agents), whose subagents run this same loop. Pre- and post-inference
# work (ingest, billing) is the caller's (rollout.engine.engine); the loop's state and
# interfaces are rollout.engine.loop.
from __future__ import annotations

import itertools

from protocol.items import FunctionCall
from rollout.conversation.calls import AgentCallSpec, HostedSpec
from rollout.conversation.window import fit
from rollout.engine.loop import Executor, LoopEnv, Outcome, Rollout
from rollout.engine.step import StepRunner, ToolCall

NO_TEAM = "The model called a multi-agent action, but the request did not enable multi_agent."


async def _boundary(r: Rollout, env: LoopEnv) -> bool:
    """A step boundary: what arrived from outside joins the context, notes are sent; True when
    the context grew."""
    box = r.mailbox
    items = box.items
    if items:
        box.items = []
        before = r.ctx.scan.tokens_scanned
        r.ctx.extend(items, r.work)
        await env.safety(r.ctx.scan.tokens_scanned - before, r.work)
    if box.notes:
        await r.send_notes()
    return bool(items)


async def run_loop(r: Rollout, env: LoopEnv, client: Executor) -> Outcome:
    grown = False  # (the engine's prepare fitted the first step's context to the window)
    while True:
        if r.mailbox.items or r.mailbox.notes:
            grown = await _boundary(r, env) or grown
        if grown:
            r.ctx = fit(r.ctx, r.window, r.truncation, r.work)
        if r.mailbox.stop is not None and r.stream.response.output:
            return Outcome("incomplete", reason=r.mailbox.stop)
        stream, r.opened = r.opened or env.model.sample(r), None
        ended = await StepRunner(r, env).run(stream)
        if isinstance(ended, Outcome):
            return ended
        actions, hosted, functions = _kinds(ended)
        if actions:  # a team's actions first
            if r.team is None:
                return Outcome("failed", reason="server_error", message=NO_TEAM)
            r.ctx.extend([c.item for c in actions], r.work, scan=False)
            await _execute(r, env, r.team, actions)
        answered: list[ToolCall] = []
        if hosted:
            # Each hosted tool's calls go to its executor, in step order (the context keeps the
            # output's order), a run of one tool's calls at a time.
            for kind, run in itertools.groupby(hosted, key=lambda c: type(c.spec)):
                if not await _execute(r, env, env.hosted[kind], list(run)):
                    return Outcome("completed")
            # The client answers its calls, and a computer call or an MCP approval request,
            # alike.
            answered = [c for c in hosted if type(c.spec) in env.answered]
        if functions or answered:
            r.ctx.extend([c.item for c in functions], r.work, scan=False)
            deferred = [c for c in functions if _is_async(c)]
            waiting = functions
            if deferred or answered:  # (in step order)
                waiting = [
                    c for c in ended if c in answered or (c in functions and not _is_async(c))
                ]
            if deferred:
                await _execute(r, env, env.deferred, deferred)
            if waiting and not await _execute(r, env, client, waiting):
                return Outcome("completed")
        grown = True  # the step's calls (and what their executors returned) joined it


def _kinds(calls: list[ToolCall]) -> tuple[list[ToolCall], list[ToolCall], list[ToolCall]]:
    """A step's calls by who runs them: a team's actions, hosted tools' calls, and the client's
    (function calls and the like), each in step order."""
    actions: list[ToolCall] = []
    hosted: list[ToolCall] = []
    functions: list[ToolCall] = []
    for c in calls:
        if isinstance(c.spec, AgentCallSpec):
            actions.append(c)
        elif isinstance(c.spec, HostedSpec):
            hosted.append(c)
        else:
            functions.append(c)
    return actions, hosted, functions


def _is_async(c: ToolCall) -> bool:
    return isinstance(c.item, FunctionCall) and bool(c.item.async_)


async def _execute(r: Rollout, env: LoopEnv, executor: Executor, calls: list[ToolCall]) -> bool:
    """Run `calls` through `executor` and add what it returns to the context; False when the
    executor ends the response instead."""
    outputs = await executor.call(r, calls)
    if outputs is None:
        return False
    before = r.ctx.scan.tokens_scanned
    r.ctx.extend(outputs, r.work, scan=executor.scans)
    if executor.scans:
        await env.safety(r.ctx.scan.tokens_scanned - before, r.work)
    return True
