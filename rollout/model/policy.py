# The simulated model: what it says next, given a context. A Policy returns one Step per sampling
# step (text or a refusal, a batch of tool calls, or an error); it does no timing
# (rollout.model.inference paces the tokens by a profile) and no I/O. Two policies: ScriptedPolicy
# (explicit steps, for tests and rigs) and DefaultPolicy (uses the tools the request allows,
# answers in the requested text format, deterministic under a seed). What a request forbids or
# forces is applied to every policy's step by rollout.model.choice.
from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import attrs
import orjson

from protocol.items import FunctionTool, SearchAction, WebSearchCall
from rollout.conversation.calls import CallSpec, Citation, FunctionCallSpec
from rollout.conversation.context import Context
from rollout.model import meaning, prose
from rollout.model.args import UnsupportedSchema, generate_arguments
from rollout.model.clienttools import (
    allows_client,
    call_arguments,
    client_spec,
    is_client_tool,
    stand_ins,
)
from rollout.model.commands import next_command
from rollout.model.grammars import GrammarUnsupported
from rollout.model.grounding import Grounding, ground
from rollout.model.hosted import HOSTED
from rollout.model.hosted.web_search import WebSearchSpec
from rollout.model.toolpick import Ranked, candidates, rank_tools


@attrs.frozen(kw_only=True)
class TextStep:
    text: str
    citations: tuple[Citation, ...] = ()
    delay_s: float = 0.0  # waited before the step is sampled (scripts for test rigs)
    refusal: bool = False  # the message is a `refusal` content part
    reasoning_tokens: int | None = None  # a reasoning model's tokens for this step (None: plan)


@attrs.frozen(kw_only=True)
class CallStep:
    """Tool calls, optionally preceded by a message (commentary) in the same step."""

    calls: tuple[CallSpec, ...]
    text: str = ""
    delay_s: float = 0.0
    reasoning_tokens: int | None = None  # a reasoning model's tokens for this step (None: plan)


@attrs.frozen(kw_only=True)
class ErrorStep:
    code: str = "server_error"
    message: str = "The model failed to generate a response."
    delay_s: float = 0.0


Step = TextStep | CallStep | ErrorStep


class Policy(Protocol):
    def next_step(self, ctx: Context) -> Step: ...


_WORDS = [
    "the",
    "patch",
    "updates",
    "parser",
    "tests",
    "so",
    "the",
    "failing",
    "case",
    "now",
    "passes",
    "and",
    "the",
    "build",
    "is",
    "green",
    "again",
    "we",
    "checked",
    "the",
    "module",
    "layout",
    "reran",
    "the",
    "suite",
    "and",
    "confirmed",
    "that",
    "the",
    "fix",
    "keeps",
    "behaviour",
    "for",
    "valid",
    "input",
    "while",
    "rejecting",
    "the",
    "malformed",
    "header",
    "with",
    "a",
    "clear",
    "error",
    "message",
    "next",
    "steps",
    "are",
    "small",
    "cleanups",
    "in",
    "the",
    "docs",
    "and",
    "one",
    "more",
    "regression",
    "test",
    "for",
    "the",
    "edge",
    "case",
]


def sentence(rng: random.Random, tokens: int) -> str:
    """Plain English-looking text of roughly `tokens` o200k tokens (one word ≈ one token)."""
    words = [rng.choice(_WORDS) for _ in range(max(1, tokens))]
    words[0] = words[0].capitalize()
    return " ".join(words) + "."


def call(name: str, arguments: dict[str, Any] | str | None = None) -> CallStep:
    """A step with one function call (arguments given as a dict or as JSON text)."""
    args = arguments if isinstance(arguments, str) else orjson.dumps(arguments or {}).decode()
    return CallStep(calls=(FunctionCallSpec(name=name, arguments=args),))


def search(query: str) -> CallStep:
    return CallStep(calls=(WebSearchSpec(query=query),))


def text(body: str) -> TextStep:
    return TextStep(text=body)


def refusal(body: str) -> TextStep:
    return TextStep(text=body, refusal=True)


def answer_text(ctx: Context, rng: random.Random, tokens: int) -> str | ErrorStep:
    """The model's answer in the request's `text.format`: about `tokens` tokens of prose
    grounded in the tool results since the prompt, a JSON object (`json_object`), or JSON valid
    for the format's schema (`json_schema`; strict schemas list every property as required and
    allow no others, so the value has exactly those), with values from the conversation."""

    g = ground(ctx)
    fmt = ctx.format
    if fmt.type == "json_object":
        return orjson.dumps({"answer": prose.answer(g, rng, tokens)}).decode()
    if fmt.type == "json_schema":
        try:
            vocabulary = g.vocabulary(meant=meaning.filler(None, g))
            value = generate_arguments(fmt.schema, rng, vocabulary=vocabulary)
        except UnsupportedSchema as exc:
            return ErrorStep(
                message=f"The simulated model cannot answer in the format '{fmt.name}': its "
                f"schema cannot be satisfied ({exc})."
            )
        return orjson.dumps(value).decode()
    return prose.answer(g, rng, tokens)


def _answer(ctx: Context, rng: random.Random, tokens: int) -> TextStep | ErrorStep:
    body = answer_text(ctx, rng, tokens)
    return body if isinstance(body, ErrorStep) else TextStep(text=body)


@attrs.define
class ScriptedPolicy:
    """Plays `steps` in order: step k is the model's k-th turn of a conversation.

    The position comes from the context (how many model turns it holds, less `first_turn` for a
    conversation that starts with prior history), so the same script gives the same rollout
    whether the client chains, resends the full history, or appends. Past the end of the script
    the model answers `final`.
    """

    steps: Sequence[Step] | Callable[[Context], Step]
    final: str = "Done."
    first_turn: int = 0  # model turns already in the first request's history (not scripted)
    #: The subagents' own steps, by agent name (a multi-agent response: rollout.engine.agents);
    #: a subagent past its script (or without one) answers "<name>: done.".
    agents: Mapping[str, Sequence[Step]] = attrs.field(factory=dict)

    def next_step(self, ctx: Context) -> Step:
        if ctx.agent is not None:
            own = self.agents.get(ctx.agent, ())
            if ctx.model_turns < len(own):
                return own[ctx.model_turns]
            return TextStep(text=f"{ctx.agent}: done.")
        if callable(self.steps):
            return self.steps(ctx)
        k = ctx.model_turns - self.first_turn
        if k < len(self.steps):
            return self.steps[k]
        if ctx.format.is_json:
            return _answer(ctx, random.Random(f"final:{k}:{ctx.last_user_text[:64]}"), 40)
        return TextStep(text=self.final)


@attrs.define
class DefaultPolicy:
    """Works like a model would with what the request allows (docs/test-rigs.md, "The default
    model"): a hosted tool's call when that tool's row wants one (rollout.model.hosted: a web
    search when the prompt asks for current information); up to `tool_calls` function calls
    (`parallel` per step) to the tools most relevant to the prompt
    (a shell or exec tool for coding prompts, running read-only commands planned from the
    prompt and earlier outputs), each after a sentence of commentary, with arguments a model
    would write (required properties, values from the conversation); then an answer of about
    `answer_tokens` tokens grounded in what the tools returned (citing the search's sources), or
    JSON in the request's `text.format`. Tools that need a person or a persistent state (asking
    the user, goals, plans) are left alone unless the prompt asks for them. With
    `tool_choice: none` it answers at once; `allowed_tools` narrows the tools it picks from.
    Deterministic under `seed`."""

    tool_calls: int = 3
    parallel: int = 1
    answer_tokens: int = 40
    seed: int = 0

    def _rng(self, ctx: Context) -> random.Random:
        return random.Random(f"{self.seed}:{ctx.model_turns}:{ctx.last_user_text[:64]}")

    def next_step(self, ctx: Context) -> Step:
        rng = self._rng(ctx)
        g = ground(ctx)
        u = g.understanding
        choice = ctx.choice
        calls_ok = choice.mode != "none"
        offered = [t for t in ctx.function_tools.values() if choice.allows(t.name)]
        offered += [t for t in stand_ins(ctx) if allows_client(choice, t.name, ctx)]
        ranked = rank_tools(offered, g)
        # Whether a function tool is named for the subject (get_weather for the weather).
        named = any(r.score >= 3 and r.kind != "shell" for r in ranked)
        # Small talk and questions about earlier results need no tool.
        chatting = u.intent in ("small_talk", "transform") or (
            u.intent == "follow_up" and bool(g.history) and not g.observations
        )
        if calls_ok and not chatting and (hosted := hosted_call(ctx, g, named)) is not None:
            return hosted
        done = ctx.calls_since_user
        if calls_ok and ranked and done < self.tool_calls and not chatting:
            step = plan_calls(ctx, g, ranked, min(self.parallel, self.tool_calls - done), rng)
            if step is not None:
                return step
        if ctx.format.is_json:
            return _answer(ctx, rng, self.answer_tokens)
        body = answer_text(ctx, rng, self.answer_tokens)
        if isinstance(body, ErrorStep):
            return body
        if ctx.searches_since_user:
            return cited_answer(body, ctx)
        return TextStep(text=body)


def hosted_call(ctx: Context, g: Grounding, named: bool) -> CallStep | None:
    """The default model's call of a hosted tool the request offers and allows, when one wants
    to be called now (the first in the table's order)."""
    choice = ctx.choice
    for row in HOSTED:
        if row.offered_as in ctx.hosted and choice.allows_hosted(row.offered_as):
            spec = row.wants(ctx, g, named)
            if spec is not None:
                return CallStep(calls=(spec,))
    return None


def tool_arguments(
    tool: FunctionTool, g: Grounding, rng: random.Random, pick: int = 0, command: str | None = None
) -> str | ErrorStep:
    """Arguments for a call of `tool` as a model writes them (JSON text): values from what the
    conversation means where it gives them (rollout.model.meaning), the rest made up; or the
    error step when its parameters schema cannot be satisfied."""
    vocabulary = g.vocabulary(pick, command, meaning.filler(tool, g, pick))
    try:
        args = generate_arguments(tool.parameters, rng, vocabulary=vocabulary)
    except UnsupportedSchema as exc:
        return ErrorStep(
            message=f"The simulated model cannot call '{tool.name}': its parameters schema "
            f"cannot be satisfied ({exc})."
        )
    return orjson.dumps(args).decode()


def plan_calls(
    ctx: Context, g: Grounding, ranked: Sequence[Ranked], n: int, rng: random.Random
) -> CallStep | TextStep | ErrorStep | None:
    """The next `n` calls (after a sentence of commentary): the candidate tools in turn, shell
    tools with the next planned command, none that repeats a call made since the prompt or one
    an earlier turn already answered. A question back instead, when the tool the prompt needs
    lacks a value only the user can give. None when no tool fits or every candidate would only
    repeat itself."""

    pool = candidates(list(ranked))
    if g.understanding.elliptical and g.history:  # "what about Berlin?": the tools used before
        earlier = {o.tool for o in g.history}
        pool = pool or [r for r in ranked if r.tool.name in earlier]
    if not pool:
        return None
    done = ctx.calls_since_user
    lead = pool[0]
    if done == 0 and lead.kind != "shell" and not is_client_tool(lead.tool.name, ctx):
        question = meaning.ask_back(lead.tool, g)
        if question is not None:
            return TextStep(text=question)
    tools = {r.tool.name: r.tool for r in ranked}
    made = {(o.tool, _canonical(o.arguments)) for o in g.observations}
    meant = meaning.made_keys(tools, g)
    planned: list[str] = []
    specs: list[CallSpec] = []
    first_command: str | None = None
    first: tuple[FunctionTool, str] | None = None
    for i in range(n):
        for attempt in range(2 * len(pool)):
            r = pool[(done + i + attempt) % len(pool)]
            command = None
            if r.kind == "shell":
                command = next_command(g, done + i, rng, planned)
                if command is None:
                    continue  # the commands that answer the prompt have run
            pick = sum(1 for name, _ in made if name == r.tool.name)
            spec: CallSpec
            client = is_client_tool(r.tool.name, ctx)
            if client:
                try:
                    spec = client_spec(r.tool.name, ctx, g, rng, command)
                except GrammarUnsupported as exc:
                    return ErrorStep(
                        message=f"The simulated model cannot call '{r.tool.name}': its "
                        f"grammar cannot be satisfied ({exc})."
                    )
                args = call_arguments(spec)
            else:
                written = tool_arguments(r.tool, g, rng, pick, command)
                if isinstance(written, ErrorStep):
                    return written
                args = written
                spec = FunctionCallSpec(name=r.tool.name, arguments=args)
            key = (r.tool.name, _canonical(args))
            if key in made:
                continue
            if r.kind != "shell" and not client:
                what = meaning.meant_key(r.tool, args, g)
                if what in meant:
                    continue
                meant.add(what)
            made.add(key)
            if command is not None:
                planned.append(command)
            if not specs:
                first_command, first = command, (r.tool, args)
            specs.append(spec)
            break
    if not specs:
        return None
    assert first is not None
    if first_command is not None or is_client_tool(first[0].name, ctx):
        text = prose.commentary(g, first[0].name, first_command, rng)
    else:
        text = meaning.commentary(first[0], first[1], rng)
    return CallStep(calls=tuple(specs), text=text)


def _canonical(arguments: str) -> str:
    try:
        return orjson.dumps(orjson.loads(arguments), option=orjson.OPT_SORT_KEYS).decode()
    except orjson.JSONDecodeError:
        return arguments


def cited_answer(body: str, ctx: Context) -> TextStep:
    """`body` followed by a citation of each source of the latest web search."""

    sources: list[str] = []
    for item in reversed(ctx.items):
        if isinstance(item, WebSearchCall) and isinstance(item.action, SearchAction):
            sources = [s.url for s in item.action.sources or ()]
            break
    out = body + (" See " if sources else "")
    citations = []
    for i, url in enumerate(sources):
        if i:
            out += " and " if i == len(sources) - 1 else ", "
        title = f"Source {i + 1}"
        start = len(out)
        out += title
        citations.append(Citation(url=url, title=title, start_index=start, end_index=len(out)))
    return TextStep(text=out + ("." if sources else ""), citations=tuple(citations))
