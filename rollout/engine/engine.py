# The engine: everything between a decoded request and its events, shared by every transport and
# shape. `prepare` does the pre-inference work (validate, restore or extend the context, scan,
# tokenize, route) and raises ProtocolError before any event exists; `run` drives the one
# sampling loop with the executor it is given and then does the post-inference work (usage,
# billing, storing). Transports decide only how events leave and where state is cached.
from __future__ import annotations

import contextlib
import logging
import time
import zlib
from collections.abc import Callable, Mapping
from typing import Any

import attrs
import trio

from protocol.choices import resolve_format, resolve_tool_choice
from protocol.conversations import conversation_id_of
from protocol.errors import ProtocolError
from protocol.hosted import MCP_CALL_TOOL
from protocol.input import (
    check_input,
    instructions_text,
    new_response,
    normalize_input,
    resolve_references,
    restore_reasoning,
)
from protocol.request import CreateRequest
from protocol.stream import ResponseStream
from rollout.conversation.context import Context, Route
from rollout.conversation.ids import new_id
from rollout.conversation.window import fit
from rollout.conversation.work import Stats, Work
from rollout.engine import bound
from rollout.engine.agents import Agents, Parked
from rollout.engine.ending import terminal_events
from rollout.engine.executors import Deferred, client_answered, hosted_tools, list_mcp_tools
from rollout.engine.faults import MESSAGES, NO_FAULTS, DisconnectingSink, FaultPlan, Faults
from rollout.engine.ingest import extend, hidden_reasoning
from rollout.engine.loop import (
    DEFAULT_SECRET,
    Cancel,
    Disconnected,
    Emit,
    EndRollout,
    Executor,
    LoopEnv,
    Model,
    Outcome,
    Rollout,
    Sink,
    as_sink,
)
from rollout.engine.plan import CreatePlan, Prepared
from rollout.engine.sampling import run_loop
from rollout.engine.simulated import SimulatedModel
from rollout.model import profiles, reasoning
from rollout.model.accel.shared import SharedEngine, comes_back
from rollout.model.hosted import mcp
from rollout.model.inference import CacheOptions, PrefixCache
from rollout.model.policy import DefaultPolicy, Policy
from rollout.store.memory import MemoryStore, Store

log = logging.getLogger("rollout")
ENGINES = 4  # simulated inference engines a route can pin a model to
CANCELLED = Outcome("incomplete", reason="cancelled")  # (frozen: one for every response)


def _remade(engine: Engine, attribute: attrs.Attribute[Any], value: Any) -> Any:
    """One of the parts of the loop's environment was replaced: the next response makes the
    environment anew (Engine.loop_env)."""
    del attribute
    engine._loop_env = None
    return value


@attrs.define(eq=False)
class Engine:
    # (Replacing one of the loop's parts makes the next response's LoopEnv anew: `_remade`.)
    policy: Policy = attrs.field(factory=DefaultPolicy, on_setattr=_remade)
    inference: profiles.InferenceProfile = attrs.field(
        default=profiles.INFERENCE_PROFILES["instant"], on_setattr=_remade
    )
    costs: profiles.CostProfile = attrs.field(
        default=profiles.COST_PROFILES["cpu-only"], on_setattr=_remade
    )
    store: Store = attrs.field(factory=MemoryStore)
    stats: Stats = attrs.field(factory=Stats)
    cache: PrefixCache = attrs.field(factory=PrefixCache, on_setattr=_remade)
    running: set[Cancel] = attrs.field(factory=set)  # loops in progress (for shutdown)
    # set when a loop or request ends (replaced each time: no setattr hooks to run for it)
    changed: trio.Event = attrs.field(factory=trio.Event, on_setattr=attrs.setters.NO_OP)
    faults: Faults | None = None
    # The model table (read only: a new table is assigned whole, and replaces the memo).
    models: Mapping[str, profiles.ModelProfile] = attrs.field(
        factory=lambda: profiles.MODEL_PROFILES, converter=profiles.read_only
    )
    # seals reasoning items' encrypted_content
    secret: bytes = attrs.field(default=DEFAULT_SECRET, on_setattr=_remade)
    # hidden reasoning by item id
    thoughts: dict[str, str] = attrs.field(factory=dict, on_setattr=_remade)
    # The model behind the loop: None for the simulated one (`policy` paced by `inference`), or
    # a real engine (rollout.upstream.UpstreamModel).
    model: Model | None = attrs.field(default=None, on_setattr=_remade)
    # One simulated accelerator every response of the server shares (`--engine`): the
    # simulated model's steps queue on it instead of each getting `inference`'s speed.
    accelerator: SharedEngine | None = attrs.field(default=None, on_setattr=_remade)
    # multi-agent teams stopped at client calls over HTTP, until their continuation resumes them
    parked: Parked = attrs.field(factory=Parked)
    _loop_env: LoopEnv | None = attrs.field(default=None, init=False)
    _lookups: profiles.Lookups | None = attrs.field(default=None, init=False)  # of `models`

    def notify(self) -> None:
        """Work in progress changed (a loop or an HTTP request ended): wake whoever waits on
        `changed` (the shutdown drain), then arm a fresh event."""
        self.changed.set()
        self.changed = trio.Event()

    @property
    def loop_env(self) -> LoopEnv:
        """The loop's environment, made anew only after what it is made of was replaced (its
        parts hold no state of their own; a create need not build four objects)."""
        env = self._loop_env
        if env is None:
            env = self._loop_env = LoopEnv(
                model=self.model
                or SimulatedModel(self.policy, self.inference, self.cache, self.accelerator),
                hosted=hosted_tools(self.costs),
                safety=self.scan_latency,
                secret=self.secret,
                thoughts=self.thoughts,
                deferred=Deferred(),
                answered=client_answered(),
            )
        return env

    @property
    def memo(self) -> bool:
        """Whether contexts count from the process's memo: the model is a real engine that
        counts and caches the prompt itself (rollout.conversation.memo)."""
        return bool(getattr(self.model, "counts_prompt", False))

    def profile(self, model: str) -> profiles.ModelProfile:
        """The profile of a model name in `models` (its lookups remembered: Lookups)."""
        lookups = self._lookups
        if lookups is None or lookups.table is not self.models:
            lookups = self._lookups = profiles.Lookups(self.models)
        return lookups.profile(model)

    # -- pre-inference --------------------------------------------------------------------------

    async def route(
        self, model: str, work: Work, cache_key: str | None = None, prefix: int | None = None
    ) -> Route:
        """The model routing decision (a declared service latency). As the real API routes:
        by a hash of the prompt's first 256 tokens (`prefix`, when it has them) combined with
        the request's `prompt_cache_key`, so one key and prefix keep a conversation on one
        engine, where its prefix is cached."""
        with work.stage("routing", items=1):
            if self.costs.routing_s > 0:
                await trio.sleep(self.costs.routing_s)
            key = f"{model}\0{cache_key or ''}\0{'' if prefix is None else prefix}"
            return Route(model=model, engine=f"{model}/{zlib.crc32(key.encode()) % ENGINES}")

    async def scan_latency(self, tokens: int, work: Work) -> None:
        """The safety service's declared latency for `tokens` newly scanned tokens."""
        seconds = self.costs.safety_seconds(tokens)
        if seconds > 0:
            with work.stage("safety_service"):
                await trio.sleep(seconds)

    async def context_for(
        self,
        req: CreateRequest,
        work: Work,
        owner: str | None = None,
        cached: Callable[[str], Context | None] | None = None,
    ) -> Context:
        """The context a create continues: a fresh one, the one `cached` holds for its
        previous response (a connection cache), or one restored from the store (its chain, or
        the conversation it is bound to)."""
        parent = req.previous_response_id
        conv_id = conversation_id_of(req.conversation)
        if conv_id is not None:
            items = await bound.conversation_items(self.store, conv_id, work, owner)
            return await bound.context_of(
                items, work, self.secret, self.thoughts, req.model, memo=self.memo
            )
        if not parent:
            return Context(memo=self.memo)
        if cached is not None and (ctx := cached(parent)) is not None:
            return ctx
        return await self.restore(parent, work, owner, req.model)

    async def restore(
        self, previous_response_id: str, work: Work, owner: str | None = None, model: str = ""
    ) -> Context:
        """Rebuild a context from the store: the whole history, re-scanned and re-rendered.
        A response stored under another API key is not found."""
        items = await bound.chain_items(self.store, previous_response_id, work, owner)
        return await bound.context_of(
            items, work, self.secret, self.thoughts, model, memo=self.memo
        )

    async def prepare(
        self,
        req: CreateRequest,
        work: Work,
        sink: Sink | Emit,
        *,
        base: Context | None = None,
        cached: Callable[[str], Context | None] | None = None,
        route: Route | None = None,
        owner: str | None = None,
    ) -> Prepared:
        """Pre-inference work. `base` is the context to extend (it is not modified unless the
        request is valid); without it, `context_for` finds it. Events will go to `sink` (a
        Sink, or a callback taking each event)."""
        work.mark("received", work.created)
        if base is None:
            base = await self.context_for(req, work, owner, cached)
        profile = self.profile(req.model)
        raw = normalize_input(req.input, new_id)
        known, lookup = await bound.references(self.store, raw, base, owner)  # any stored item
        check_input(raw, base.open_calls, known, base.async_calls)
        hidden = restore_reasoning(req.input, raw, self.secret, known, req.store)
        items = resolve_references(raw, lookup)
        ctx = base
        ctx.model = req.model  # what the new items' images and files cost depends on it
        before = ctx.scan.tokens_scanned
        ctx.set_header(instructions_text(req.instructions), req.tools, work)
        ctx.hidden.update(hidden_reasoning(items, self.secret, self.thoughts, hidden))
        await extend(ctx, items, work)
        if ctx.scan.tokens_scanned > before and self.costs.safety_seconds(1) > 0:
            await self.scan_latency(ctx.scan.tokens_scanned - before, work)
        truncation = req.truncation or "disabled"
        window = profile.context_window
        if self.accelerator is not None:  # (the shared engine's memory bounds it too)
            window = min(window, self.accelerator.window)
        ctx = fit(ctx, window, truncation, work)
        ctx.choice = resolve_tool_choice(
            req.tool_choice, parallel=req.parallel, max_calls=req.max_tool_calls
        )
        ctx.format = resolve_format(req.text)
        if MCP_CALL_TOOL.name in ctx.hosted:  # (a server it cannot reach: 424)
            ctx.mcp_listed = await mcp.listings(ctx, new_id)
        elif ctx.mcp_listed:
            ctx.mcp_listed = {}
        ctx.response_steps = ctx.response_calls = 0
        if route is None:
            prefix = ctx.block_hash(1)
            route = await self.route(req.model, work, req.prompt_cache_key, prefix)
        ctx.route = route
        settings = reasoning.effective(profile, req.reasoning)
        response = new_response(req, new_id("resp"), int(time.time()), settings)
        if req.conversation is not None:
            response.conversation = {"id": conversation_id_of(req.conversation) or ""}
        rollout = Rollout(
            ctx=ctx,
            stream=ResponseStream(response),
            route=route,
            work=work,
            sink=as_sink(sink),
            max_output_tokens=req.max_output_tokens,
            reasoning=reasoning.plan(profile, req.reasoning, req.include),
            window=window,
            truncation=truncation,
            cache_options=CacheOptions.of(req.prompt_cache_retention, req.prompt_cache_options),
            request=req,
        )
        return Prepared(request=req, rollout=rollout, input_items=items, owner=owner)

    # -- the loop and post-inference ------------------------------------------------------------

    def plan_of(self, prepared: Prepared, *, held: bool = False) -> CreatePlan:
        """The create's decisions (CreatePlan), made the first time they are asked for, its
        faults drawn then; every later part reads the same plan. `held`: its client holds it
        until it ends (a WebSocket lane)."""
        if prepared.plan is None:
            prepared.plan = CreatePlan.of(prepared.request, self.draw_faults(), held=held)
        return prepared.plan

    async def open(self, prepared: Prepared) -> None:
        """Open the response's first sampling step before any of its events, when the model
        does so (a real engine: its request is sent and answered here), so that the engine's
        refusal raises a ProtocolError that is the request's own (a 429 stays a retryable 429).
        `run` takes the opened step (or closes it, if it never samples)."""
        if self.model is None or not self.plan_of(prepared).samples:
            return
        r = prepared.rollout  # (its context was fitted to the window by `prepare`)
        # (the root of a multi-agent response may call its actions from the first step: `run`
        # makes its team)
        r.ctx.team = r.team is not None or (r.request is not None and r.request.waits_for_inject)
        r.opened = await self.model.open(r)

    async def discard(self, prepared: Prepared) -> None:
        """Close a step opened by `open` that will not be sampled (aborts its request)."""
        opened, prepared.rollout.opened = prepared.rollout.opened, None
        if opened is not None:
            with trio.CancelScope(shield=True):
                await opened.aclose()

    async def run(
        self,
        prepared: Prepared,
        client: Executor,
        *,
        billing: trio.Nursery | None = None,
        cancel: Cancel | None = None,
    ) -> Outcome:
        """Run the loop to its end, as its plan says (`plan_of`). Billing blocks before the
        terminal event, unless a nursery is given: then it runs there, overlapped with whatever
        comes next (WebSocket; a bill with no declared latency is made at once instead).
        `cancel` stops the loop from outside; the response then ends `incomplete`."""
        r = prepared.rollout
        made = self.plan_of(prepared)
        if not made.samples:
            return await self.warm_up(prepared, billing)
        cancel = cancel or r.cancel
        self.running.add(cancel)
        plan = made.faults
        if plan.disconnect_after is not None:
            r.sink = DisconnectingSink(r.sink, plan.disconnect_after)
        if r.team is None and r.request is not None and r.request.waits_for_inject:
            cap = self.accelerator.window if self.accelerator is not None else None
            r.team = Agents.of(r.request, self.profile, cap, self.route, self.parked)
        r.ctx.team = r.team is not None  # (a chained context was maybe a team's root before)
        outcome = CANCELLED
        try:
            with cancel.scope:
                await r.send(r.stream.opening())
                if r.opened is None:
                    r.sink.push()  # they leave now (the client reads them as the loop runs)
                # (an opened step holds the engine's first batch: they leave with its first
                # token, in one write, or at the loop's first wait for the engine)
                if plan.latency_s > 0:
                    with r.work.stage("fault"):
                        await trio.sleep(plan.latency_s)
                if plan.error is not None:  # a failure inside the stream (model_error)
                    raise ProtocolError(
                        message=MESSAGES[plan.error], code=plan.error, type="server_error"
                    )
                if r.ctx.mcp_listed:
                    await list_mcp_tools(r)
                if r.team is None:
                    outcome = await run_loop(r, self.loop_env, client)
                else:  # a multi-agent response: the root's loop and its subagents' loops
                    outcome = await r.team.run(r, self.loop_env, client)
            if cancel.scope.cancelled_caught:
                outcome = Outcome("incomplete", reason=cancel.reason)
        except EndRollout as end:
            outcome = Outcome("incomplete", reason=end.reason)
        except Disconnected:
            outcome = Outcome("incomplete", reason="client_disconnected")
            r.gone = True
        except ProtocolError as exc:
            outcome = Outcome("failed", reason=exc.code or "server_error", message=exc.message)
        except Exception:
            log.exception("sampling loop failed for %s", r.stream.response.id)
            outcome = Outcome(
                "failed", reason="server_error", message="The model failed to generate a response."
            )
        finally:
            self.running.discard(cancel)
            self.notify()
            if r.opened is not None:
                await self.discard(prepared)
            if self.accelerator is not None:
                self.accelerator.close(r, r.stream.response.id, comes_back(r))
        await self.finish(prepared, outcome, billing)
        return outcome

    def draw_faults(self) -> FaultPlan:
        """The injected faults of the next response (none unless faults are configured)."""
        return self.faults.next_plan() if self.faults is not None else NO_FAULTS

    async def warm_up(self, prepared: Prepared, billing: trio.Nursery | None) -> Outcome:
        """`generate: false`: state is prepared and cached, nothing is sampled.

        `response.created` then `response.completed` with `output: []` and zero output tokens;
        the prompt is prefilled into the prefix cache (no wait), so the next turn hits it.
        """
        r = prepared.rollout
        ttl = r.cache_options.ttl_s
        self.cache.insert(r.route.engine, r.ctx.block_hashes, 0, trio.current_time() + ttl)
        r.input_tokens = r.ctx.token_count
        await r.send(r.stream.created_only())
        outcome = Outcome("completed")
        await self.finish(prepared, outcome, billing)
        return outcome

    async def finish(
        self, prepared: Prepared, outcome: Outcome, billing: trio.Nursery | None = None
    ) -> None:
        """Post-inference: usage, billing, the store, the terminal event."""
        r = prepared.rollout
        if r.mailbox.notes:  # acknowledgements still queued go before the terminal event
            with contextlib.suppress(Disconnected):
                await r.send_notes()
        if billing is None:
            await self.bill(r.work)
        events = terminal_events(r.stream, outcome, r.usage, int(time.time()))
        # Stored before the terminal event is sent: a client that saw it can retrieve and chain
        # the response at once, and (with a durable store) after a crash of the server. A store
        # that fails ends it `failed` instead, with the store's error (it was not kept).
        failure = None
        if prepared.request.store or r.stream.response.conversation is not None:  # (else none)
            failure = await bound.keep(self.store, prepared, outcome.status != "failed")
        if failure is not None:
            prepared.unstored = failure
            r.stream.retract(events)
            events = r.stream.fail(failure.code or "server_error", failure.message, usage=r.usage)
        with contextlib.suppress(Disconnected):
            await r.send(events)
            if r.mailbox.notes:  # posted while the terminal event was on its way
                await r.send_notes()
        r.mailbox.closed = True
        r.work.mark("terminal")
        if billing is not None and self.costs.billing_s > 0:
            billing.start_soon(self._bill_and_record, r.work)
            return
        if billing is not None:  # no latency to overlap: billed here, with no task of its own
            self._billed(r.work)
        self.stats.record(r.work)

    async def _bill_and_record(self, work: Work) -> None:
        """Background billing: counted even if cancelled (flushed on close)."""
        try:
            await self.bill(work)
        finally:
            self.stats.record(work)

    async def bill(self, work: Work) -> None:
        if self.costs.billing_s <= 0:
            self._billed(work)
            return
        with work.stage("billing", items=1):
            self.stats.billed += 1
            await trio.sleep(self.costs.billing_s)

    def _billed(self, work: Work) -> None:
        """A bill with no declared latency: counted, nothing to wait for."""
        with work.stage("billing", items=1):
            self.stats.billed += 1


__all__ = ["Engine", "Prepared"]
