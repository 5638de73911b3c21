# A multi-agent response's team (the real API's multi-agent beta): the root agent, which the
# client asked and which answers the response, and the subagents it spawns, each a sampling loop
# of the one loop (rollout.engine.sampling) with its own Context, running beside the root's in
# the response's nursery (the response owns them: when the root answers, or the response is
# cancelled, every agent stops). The team is the executor of the agents' actions (spawn_agent,
# wait_agent, send_message, followup_task, interrupt_agent, list_agents), each answered with a
# `multi_agent_call_output`. Every agent's events go out as one stream: each agent builds its
# items on its own ResponseStream over the one Response (output indexes are shared), and the
# team's sink numbers the events in the order they are sent. Choices: docs/protocol-choices.md.
from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

import attrs
import orjson
import trio

from protocol.agentitems import (
    ROOT_AGENT,
    AgentMessage,
    AgentRef,
    MultiAgentCall,
    MultiAgentCallOutput,
)
from protocol.items import FunctionCallOutput, InputText, Item, Message, OutputText, text_of
from protocol.request import CreateRequest
from protocol.response import Usage
from protocol.stream import ResponseStream
from rollout.conversation.context import Context, Route
from rollout.conversation.ids import new_id
from rollout.conversation.work import Work
from rollout.engine.ingest import extend
from rollout.engine.loop import Call, EndRollout, Executor, LoopEnv, Outcome, Rollout
from rollout.engine.sampling import run_loop
from rollout.engine.teamparts import (
    TEAMS_KEPT,
    Kept,
    Numbered,
    Parked,
    Slots,
    spawn_model_args,
    spawn_settings,
)
from rollout.model.profiles import ModelProfile

log = logging.getLogger("rollout.engine.agents")

DEFAULT_LIMIT = 6  # max_concurrent_subagents when unset (the SDK's MultiAgentConfig)


@attrs.define(eq=False)
class Agent:
    """One subagent: its loop's rollout, where it stands, and its last answer."""

    name: str
    rollout: Rollout
    #: pending (waiting for a slot), running, completed, interrupted, failed, or
    #: waiting_for_client (over HTTP: it stopped at a client call)
    status: str = "pending"
    answer: str = ""
    tasks: list[str] = attrs.field(factory=list)  # follow-up tasks not yet started
    idle: trio.Event = attrs.field(factory=trio.Event)  # set while no task runs or waits
    woken: trio.Event = attrs.field(factory=trio.Event)  # a follow-up task arrived
    scope: trio.CancelScope | None = None  # its current task's (interrupt_agent cancels it)

    @property
    def usage(self) -> Usage:
        """What this agent's own steps cost (the response's usage sums every agent's); its
        stages are `rollout.work`."""
        return self.rollout.usage


def _answer(ctx: Context) -> str:
    for item in reversed(ctx.items):
        if isinstance(item, Message) and item.role == "assistant":
            return text_of(item.content)
    return ""


def _task(text: str) -> Message:
    return Message(
        id=new_id("msg"), role="user", content=(InputText(text=text),), status="completed"
    )


@attrs.define(eq=False)
class Agents:
    """The team of one multi-agent response (rollout.engine.loop.Team)."""

    limit: int = DEFAULT_LIMIT  # subagents running at once; the rest wait for a slot
    agents: dict[str, Agent] = attrs.field(factory=dict)
    scans = False  # the actions' outputs are the server's own items
    #: the model table's profiles (the engine's), the window's cap beside a model's own (a
    #: shared engine's memory), and the routing of a model name: a spawn's `model` uses them
    models: Callable[[str], ModelProfile] | None = None
    cap: int | None = None
    router: Callable[[str, Work], Awaitable[Route]] | None = None
    parked: Parked | None = None  # where the team is kept when it stops for client calls
    resumed: list[Kept] | None = None  # the previous response's parked team, this one continues
    _root: Rollout | None = None
    _env: LoopEnv | None = None
    _client: Executor | None = None
    _sink: Numbered | None = None
    _nursery: trio.Nursery | None = None
    _slots: Slots = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self._slots = Slots(self.limit)

    @classmethod
    def of(
        cls,
        req: CreateRequest,
        models: Callable[[str], ModelProfile] | None = None,
        cap: int | None = None,
        router: Callable[[str, Work], Awaitable[Route]] | None = None,
        parked: Parked | None = None,
    ) -> Agents:
        config = req.multi_agent
        limit = config.max_concurrent_subagents if config is not None else None
        resumed = parked.take(req.previous_response_id) if parked is not None else None
        return cls(
            limit=limit or DEFAULT_LIMIT,
            models=models,
            cap=cap,
            router=router,
            parked=parked,
            resumed=resumed,
        )

    # -- the root's loop, with its subagents' beside it ----------------------------------------

    async def run(self, r: Rollout, env: LoopEnv, client: Executor) -> Outcome:
        self._root, self._env, self._client = r, env, client
        self._sink = Numbered(r.sink, seq=r.stream.next_sequence_number)
        r.sink = self._sink
        r.stream.agent = AgentRef(agent_name=ROOT_AGENT)
        error: BaseException | None = None
        outcome = Outcome("completed")
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(self._notes, r)
                try:
                    await self._resume(r)
                    outcome = await run_loop(r, env, client)
                except BaseException as exc:  # (raised as itself, not in an exception group)
                    error = exc
                nursery.cancel_scope.cancel()
        finally:
            self._sum(r)
        if error is not None:
            raise error
        waiting = any(a.status == "waiting_for_client" for a in self)
        stored = r.request is None or r.request.store is not False
        if waiting and stored and outcome.status == "completed" and self.parked is not None:
            kept = [Kept.of(a.name, a.status, a.answer, a.rollout) for a in self]
            self.parked.keep(r.stream.response.id, kept)  # a continuation resumes them
        return outcome

    async def _resume(self, r: Rollout) -> None:
        """The previous response's team, continued: each subagent with its context, a stopped
        one resumed with the outputs of its open calls that this response's input gave (the
        root's context holds them), the others idle until given a task."""
        before, self.resumed = self.resumed, None
        if before is None:
            return
        assert self._nursery is not None
        outputs = {i.call_id: i for i in r.ctx.items if isinstance(i, FunctionCallOutput)}
        for old in before:
            sub = self._rollout(old.name, old.ctx, old)
            agent = Agent(name=old.name, rollout=sub, status=old.status, answer=old.answer)
            self.agents[old.name] = agent
            answers = [outputs[c] for c in sorted(sub.ctx.open_calls) if c in outputs]
            begin = old.status == "waiting_for_client" and bool(answers)
            if begin:
                sub.ctx.response_steps = sub.ctx.response_calls = 0
                await extend(sub.ctx, answers, sub.work)
                agent.status = "running" if self._slots.take_now(agent.name) else "pending"
            self._nursery.start_soon(self._drive, agent, begin)

    async def _notes(self, r: Rollout) -> None:
        """Acknowledgements (of injects) leave at once, whichever agent is running or waiting:
        the root's loop may be waiting for its subagents, not at a step boundary."""
        while True:
            await r.mailbox.wait()
            await r.send_notes()

    def _sum(self, r: Rollout) -> None:
        """The response's usage and work are its agents' together."""
        for agent in self.agents.values():
            sub = agent.rollout
            r.input_tokens += sub.input_tokens
            r.cached_tokens += sub.cached_tokens
            r.output_tokens += sub.output_tokens
            r.reasoning_tokens += sub.reasoning_tokens
            r.work.merge(sub.work)
            if r.work.agents is None:
                r.work.agents = {}
            r.work.agents[agent.name] = sub.work

    # -- the actions ----------------------------------------------------------------------------

    async def call(self, r: Rollout, calls: Sequence[Call]) -> Sequence[Item]:
        done: list[Item] = []
        for c in calls:
            call = c.item
            assert isinstance(call, MultiAgentCall)
            action = call.action
            try:
                args = orjson.loads(call.arguments or "{}")
                if not isinstance(args, dict):
                    raise ValueError("arguments must be a JSON object")
                result = await self._act(r, action, args)
            except ValueError as exc:
                result = {"error": f"Invalid arguments for {action}: {exc}"}
            out = MultiAgentCallOutput(
                id=new_id("maco"),
                action=action,
                call_id=call.call_id,
                output=(OutputText(text=orjson.dumps(result).decode()),),
            )
            index = r.stream.next_output_index
            await r.send(r.stream.whole_item(out))
            done.append(r.stream.response.output[index])
        return done

    async def _act(self, r: Rollout, action: str, args: dict[str, Any]) -> dict[str, Any]:
        if action == "spawn_agent":
            return await self._spawn(args)
        if action == "list_agents":
            return {"agents": [{"agent_name": a.name, "status": a.status} for a in self]}
        if action == "wait_agent":
            return await self._wait(r, args)
        target = args.get("target")
        if not isinstance(target, str):
            return {"error": "'target' must name an agent."}
        if action == "send_message":
            return await self._send(r, target, str(args.get("message", "")))
        agent = self.agents.get(target)
        if agent is None:
            return {"error": f"No agent named '{target}'."}
        if action == "interrupt_agent":
            before = agent.status
            if agent.scope is not None:
                agent.scope.cancel()
            return {"agent_name": target, "previous_status": before}
        # followup_task: a new task, started when the current one ends
        if agent.idle.is_set():
            agent.idle = trio.Event()
        agent.tasks.append(str(args.get("message", "")))
        agent.woken.set()
        return {"agent_name": target, "status": "queued" if agent.scope else "running"}

    def __iter__(self) -> Iterator[Agent]:
        return iter(self.agents.values())

    def _name_of(self, r: Rollout) -> str:
        return r.ctx.agent or ROOT_AGENT

    async def _spawn(self, args: dict[str, Any]) -> dict[str, Any]:
        root = self._root
        assert root is not None and self._nursery is not None and self._sink is not None
        name = args.get("agent_name") or f"agent_{len(self.agents) + 1}"
        if not isinstance(name, str) or name == ROOT_AGENT or name in self.agents:
            return {"error": f"An agent named {orjson.dumps(name).decode()} exists already."}
        model, effort = spawn_model_args(args)
        work = Work(keep_spans=root.work.keep_spans)
        request, route, plan, window = root.request, root.route, root.reasoning, root.window
        if (model is not None or effort is not None) and root.request is not None:
            request, plan, window = spawn_settings(
                root.request, model, effort, window, self.models, self.cap
            )
            if model is not None and model != root.request.model and self.router is not None:
                route = await self.router(model, work)  # (its engine is that model's)
        ctx = Context(model=request.model if request else root.ctx.model, route=route, agent=name)
        ctx.set_header(root.ctx.instructions, root.ctx.tools, work)  # the shared prefix
        ctx.extend([_task(str(args.get("message", "")))], work)
        own = attrs.evolve(root, route=route, request=request, reasoning=plan, window=window)
        sub = self._rollout(name, ctx, own, work)
        agent = Agent(name=name, rollout=sub)
        self.agents[name] = agent
        if self._slots.take_now(agent.name):  # (in spawn order: the first `limit` run at once)
            agent.status = "running"
        self._nursery.start_soon(self._drive, agent)
        said: dict[str, Any] = {"agent_name": name, "status": agent.status}
        if request is not None:
            said["model"] = request.model
        said["reasoning_effort"] = plan.effort if plan is not None else None
        return said

    def _rollout(
        self, name: str, ctx: Context, like: Rollout | Kept, work: Work | None = None
    ) -> Rollout:
        """A subagent's rollout on this response's stream: `like`'s settings, its own counts."""
        root = self._root
        assert root is not None and self._sink is not None
        return Rollout(
            ctx=ctx,
            stream=ResponseStream(root.stream.response, AgentRef(agent_name=name)),
            route=like.route,
            work=work or Work(keep_spans=root.work.keep_spans),
            sink=self._sink,
            max_output_tokens=root.max_output_tokens,  # (each agent's own budget)
            reasoning=like.reasoning,
            window=like.window,
            truncation=root.truncation,
            cache_options=root.cache_options,
            request=like.request,
            team=self,
        )

    async def _drive(self, agent: Agent, begin: bool = True) -> None:
        """The subagent's loop, one task after another (its spawn's, then each follow-up's),
        each in a slot of the team's limit; it never raises (an agent's failure is its
        status). Not `begin`: it waits for a follow-up first (a resumed idle agent)."""
        assert self._env is not None and self._client is not None
        r = agent.rollout
        while True:
            if not begin:
                await self._idle(agent)
            status = "interrupted"
            with trio.CancelScope() as scope:
                agent.scope = scope
                try:
                    await self._slots.take(agent.name)
                    agent.status = "running"
                    outcome = await run_loop(r, self._env, self._client)
                    status = outcome.status
                    if status == "completed" and r.ctx.open_calls - r.ctx.async_calls:
                        status = "waiting_for_client"  # (HTTP: its call ended it)
                except EndRollout:
                    status = "failed"
                except Exception:
                    log.exception("subagent %s failed", agent.name)
                    status = "failed"
                finally:
                    self._slots.give_back(agent.name)
            agent.scope = None
            agent.status, agent.answer = status, _answer(r.ctx)
            begin = False  # (next: its follow-up task)

    async def _idle(self, agent: Agent) -> None:
        """Until a follow-up task arrives; it joins the agent's context."""
        if not agent.tasks:
            agent.idle.set()
        while not agent.tasks:
            agent.woken = trio.Event()
            await agent.woken.wait()
        agent.status = "pending"
        agent.rollout.ctx.extend([_task(agent.tasks.pop(0))], agent.rollout.work)

    async def _wait(self, r: Rollout, args: dict[str, Any]) -> dict[str, Any]:
        """Until each target is idle (its task answered, or stopped); what each said."""
        targets = args.get("targets")
        if isinstance(targets, str):
            targets = [targets]
        if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
            return {"error": "'targets' must be a list of agent names."}
        me = self._name_of(r)
        timeout = args.get("timeout_ms")
        seconds = timeout / 1000 if isinstance(timeout, int | float) and timeout > 0 else None
        with trio.move_on_after(seconds if seconds is not None else float("inf")):
            for name in targets:
                agent = self.agents.get(name)
                if agent is not None and name != me:
                    await agent.idle.wait()
        result: dict[str, Any] = {}
        for name in targets:
            agent = self.agents.get(name)
            if agent is None or name == me:
                result[name] = {"status": "not_found" if agent is None else "self"}
            else:
                result[name] = {"status": agent.status, "answer": agent.answer}
        return result

    async def _send(self, r: Rollout, target: str, text: str) -> dict[str, Any]:
        """An `agent_message` in the output, and in the recipient's context at its next step
        boundary (a running agent's next step, an idle one's next task)."""
        root = self._root
        assert root is not None
        to = root if target == ROOT_AGENT else getattr(self.agents.get(target), "rollout", None)
        if to is None:
            return {"error": f"No agent named '{target}'."}
        message = AgentMessage(
            id=new_id("amsg"),
            author=self._name_of(r),
            recipient=target,
            content=(InputText(text=text),),
        )
        index = r.stream.next_output_index
        await r.send(r.stream.whole_item(message))
        to.mailbox.post(items=[r.stream.response.output[index]])
        return {"agent_name": target, "delivered": True}


__all__ = ["DEFAULT_LIMIT", "TEAMS_KEPT", "Agent", "Agents", "Kept", "Parked"]
