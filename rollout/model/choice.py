# What a request forbids or forces, applied to every policy's step before it is sampled:
# `tool_choice` (`none`, `auto`, `required`, a named function, `allowed_tools`, a hosted tool),
# `parallel_tool_calls: false` (one call per step) and `max_tool_calls` (tool calls of a whole
# response). A policy may already honour them (DefaultPolicy does); a script is held to them here,
# so no policy can call what the request ruled out. Pure: no timing, no I/O.
from __future__ import annotations

import random

import attrs

from rollout.conversation.calls import (
    AgentCallSpec,
    CallSpec,
    ClientCallSpec,
    CustomCallSpec,
    FunctionCallSpec,
    HostedSpec,
)
from rollout.conversation.context import Context
from rollout.model.clienttools import client_spec
from rollout.model.grammars import GrammarUnsupported
from rollout.model.grounding import ground
from rollout.model.hosted import BY_NAME, HOSTED
from rollout.model.policy import CallStep, ErrorStep, Step, TextStep, answer_text, tool_arguments
from rollout.model.toolpick import rank_tools

ANSWER_TOKENS = 40  # the length of an answer made up when the step's calls were all ruled out


def _rng(ctx: Context) -> random.Random:
    return random.Random(f"choice:{ctx.model_turns}:{ctx.response_steps}:{ctx.last_user_text[:64]}")


def _allowed(spec: CallSpec, ctx: Context) -> bool:
    """Whether the request rules the call out (a script may call what the request did not
    declare; only `tool_choice` forbids)."""
    choice = ctx.choice
    if isinstance(spec, AgentCallSpec):
        return True  # (the multi-agent actions are not tools a tool_choice names)
    if isinstance(spec, HostedSpec):
        return choice.allows_hosted(spec.tool.offered_as)
    if isinstance(spec, ClientCallSpec):
        return choice.allows_client(spec.name)
    return choice.allows(spec.name)


def _named(spec: CallSpec, name: str) -> bool:
    """Whether the call is of the function or custom tool `name`."""
    return isinstance(spec, FunctionCallSpec | CustomCallSpec) and spec.name == name


def _is_forced_client(spec: CallSpec, ctx: Context) -> bool:
    return isinstance(spec, ClientCallSpec) and spec.name == ctx.choice.forced_client


def _client_call(name: str, ctx: Context) -> CallStep | ErrorStep:
    """A call of the custom or built-in client tool `name` (rollout.model.clienttools)."""
    try:
        spec = client_spec(name, ctx, ground(ctx), _rng(ctx))
    except GrammarUnsupported as exc:
        return ErrorStep(
            message=f"The simulated model cannot call '{name}': its grammar cannot be "
            f"satisfied ({exc})."
        )
    return CallStep(calls=(spec,))


def _is_forced_hosted(spec: CallSpec, ctx: Context) -> bool:
    """Whether the call is of the hosted tool `tool_choice` forces."""
    return isinstance(spec, HostedSpec) and spec.tool.offered_as == ctx.choice.forced_hosted


def _forced_call(name: str, ctx: Context) -> CallStep | ErrorStep:
    if name not in ctx.function_tools:
        return _client_call(name, ctx)  # a custom tool
    args = tool_arguments(ctx.function_tools[name], ground(ctx), _rng(ctx))
    if isinstance(args, ErrorStep):
        return args
    return CallStep(calls=(FunctionCallSpec(name=name, arguments=args),))


def _required_call(ctx: Context) -> CallStep | ErrorStep | None:
    """The call the first step must make, or None when nothing callable is allowed."""
    choice = ctx.choice
    if choice.forced_client is not None:
        offered = choice.forced_client in ctx.client_tools
        return _client_call(choice.forced_client, ctx) if offered else None
    if choice.forced_hosted is not None or (choice.mode == "required" and not _any_client(ctx)):
        return _hosted_call(ctx)
    if choice.forced is not None:
        known = choice.forced in ctx.function_tools or choice.forced in ctx.custom_tools
        return _forced_call(choice.forced, ctx) if known else None
    allowed = [t for n, t in sorted(ctx.function_tools.items()) if choice.allows(n)]
    names = [r.tool.name for r in rank_tools(allowed, ground(ctx))]  # the most relevant first
    names += [t.name for t in allowed if t.name not in names]
    names += sorted(n for n in ctx.custom_tools if choice.allows(n) and n not in names)
    if names:
        return _forced_call(names[0], ctx)
    kinds = [k for k in ("shell", "local_shell", "apply_patch") if k in ctx.client_tools]
    kinds = [k for k in kinds if choice.allows_client(k)]
    return _client_call(kinds[0], ctx) if kinds else None


def _any_client(ctx: Context) -> bool:
    """Whether the request offers and allows a tool the client runs (a function, a custom
    tool, a built-in client tool)."""
    choice = ctx.choice
    return (
        any(choice.allows(n) for n in ctx.function_tools)
        or any(choice.allows(n) for n in ctx.custom_tools)
        or any(choice.allows_client(k) for k in ctx.client_tools)
    )


def _hosted_call(ctx: Context) -> CallStep | None:
    """A call of the forced hosted tool, else of the first (in the table's order) the request
    offers and allows; None when there is none."""
    choice = ctx.choice
    forced = choice.forced_hosted
    names = [row.name for row in HOSTED] if forced is None else [forced]
    for name in names:
        row = BY_NAME.get(name)
        if row is not None and name in ctx.hosted and choice.allows_hosted(name):
            spec = row.plan(ctx)
            if spec is not None:  # (an MCP server that lists no tool has nothing to call)
                return CallStep(calls=(spec,))
    return None


def _answer(step: CallStep, ctx: Context) -> TextStep | ErrorStep:
    """The step the model takes when every call it wanted was ruled out: its commentary, or an
    answer in the request's format."""
    if step.text and not ctx.format.is_json:
        return TextStep(text=step.text, delay_s=step.delay_s)
    body = answer_text(ctx, _rng(ctx), ANSWER_TOKENS)
    return body if isinstance(body, ErrorStep) else TextStep(text=body, delay_s=step.delay_s)


def constrain(step: Step, ctx: Context) -> Step:
    """`step` as the request lets the model take it (see the module comment)."""
    choice = ctx.choice
    budget = None if choice.max_calls is None else max(0, choice.max_calls - ctx.response_calls)
    first = ctx.response_steps == 0
    if first and choice.must_call and budget != 0 and not _satisfies(step, ctx):
        forced = _required_call(ctx)
        if forced is not None:
            step = attrs.evolve(forced, delay_s=step.delay_s) if step.delay_s else forced
    if not isinstance(step, CallStep):
        return step
    calls = [c for c in step.calls if _allowed(c, ctx)]
    if first and choice.forced is not None:
        calls = [c for c in calls if _named(c, choice.forced)]
    elif first and choice.forced_client is not None:
        calls = [c for c in calls if _is_forced_client(c, ctx)]
    elif first and choice.forced_hosted is not None:
        calls = [c for c in calls if _is_forced_hosted(c, ctx)]
    if budget is not None:
        calls = calls[:budget]
    if not choice.parallel:  # (a team's actions are not tool calls: a step makes them all)
        tools = [c for c in calls if not isinstance(c, AgentCallSpec)]
        calls = [c for c in calls if isinstance(c, AgentCallSpec) or c in tools[:1]]
    if not calls:
        return _answer(step, ctx)
    if len(calls) == len(step.calls):
        return step
    return attrs.evolve(step, calls=tuple(calls))


def _satisfies(step: Step, ctx: Context) -> bool:
    """Whether the step already makes the call the first step must make."""
    if not isinstance(step, CallStep):
        return isinstance(step, ErrorStep)
    choice = ctx.choice
    allowed = [c for c in step.calls if _allowed(c, ctx)]
    if choice.forced_hosted is not None:
        return any(_is_forced_hosted(c, ctx) for c in allowed)
    if choice.forced_client is not None:
        return any(_is_forced_client(c, ctx) for c in allowed)
    if choice.forced is not None:
        return bool(allowed) and _named(allowed[0], choice.forced)
    return bool(allowed)


__all__ = ["constrain"]
