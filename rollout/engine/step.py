# One sampling step of the loop (rollout.engine.loop): the pieces a model streams turned into
# the response's events, its context and its usage. At most one output item is open at a time
# (the next opener or the end of the step closes it); a step ends with its calls (to run next) or
# with how the response ended (an Outcome). Also what a step leaves: ToolCall, an Outcome, and the
# engine's memory of hidden reasoning.
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
import trio

from protocol.agentitems import MultiAgentCall
from protocol.clientitems import CLIENT_BY_CALL
from protocol.deltas import DeltaRun
from protocol.items import Item, UrlCitation
from protocol.sealing import Sealed, seal
from rollout.conversation.calls import CallSpec, Citation, CustomCallSpec, FunctionCallSpec
from rollout.conversation.ids import new_id
from rollout.engine.loop import Outcome
from rollout.model import pieces as p

if TYPE_CHECKING:
    from rollout.engine.loop import LoopEnv, Pieces, Rollout

#: Delta events queued at once: about 200 KB of text deltas (an outbox overshoots its high water
#: by one run); fewer, larger runs cost less per event.
RUN_MAX = 1024
THOUGHTS_KEPT = 100_000  # reasoning items whose hidden text the engine remembers (oldest go)


@attrs.frozen
class ToolCall:
    """One call of a sampling step, as streamed: where it sits in the output, the item (a
    FunctionCall, or a hosted tool's item in progress) and what the model asked for."""

    output_index: int
    item: Item
    spec: CallSpec


async def scripted_wait(r: Rollout, seconds: float) -> None:
    """A scripted step's wait before sampling; a steer ends it early (the boundary is here)."""
    with r.work.stage("fault"), trio.move_on_after(seconds):
        while r.mailbox.stop is None:
            await r.mailbox.wait()
            await r.send_notes()


def remember(thoughts: dict[str, str], item_id: str, hidden: str) -> None:
    """Keep a step's hidden reasoning by item id, so a chain restored from the store (or a
    stored conversation sent back without blobs) renders the same prompt as a cached one."""
    thoughts[item_id] = hidden
    while len(thoughts) > THOUGHTS_KEPT:
        del thoughts[next(iter(thoughts))]


@attrs.define(eq=False)
class StepRunner:
    """One sampling step: the model's pieces turned into events, the context and usage."""

    r: Rollout
    env: LoopEnv
    calls: list[ToolCall] = attrs.field(factory=list)
    kind: str = ""  # the open item: "reasoning", "text", "call", "custom", or "" (none)
    index: int = 0  # its output index
    item_id: str = ""  # the open reasoning item's id
    buffer: list[str] = attrs.field(factory=list)  # a call's arguments, or the hidden reasoning
    name: str = ""  # the open call's function
    spent: int = 0  # reasoning tokens of the open reasoning item
    summary: bool = False  # a summary part is open
    citations: list[Citation] = attrs.field(factory=list)
    chars: int = 0  # characters of the open message so far

    async def run(self, stream: Pieces) -> list[ToolCall] | Outcome:
        """Consume the step; its calls (to run next) or how the response ended."""
        r = self.r
        out0, reasoning0, in0, cached0 = (
            r.output_tokens,
            r.reasoning_tokens,
            r.input_tokens,
            r.cached_tokens,
        )
        finish = "stop"
        r.first_token_pending = True
        sampled = True
        try:
            try:
                async for piece in stream:
                    if isinstance(piece, p.Text):
                        await self._text(piece.deltas)
                    elif isinstance(piece, p.Args):
                        await self._args(piece.deltas)
                    elif isinstance(piece, p.Thought):
                        r.output_tokens += piece.tokens
                        r.reasoning_tokens += piece.tokens
                        self.spent += piece.tokens
                        if piece.text:
                            self.buffer.append(piece.text)
                    elif isinstance(piece, p.Prefilled):
                        r.input_tokens += piece.prompt_tokens
                        r.cached_tokens += piece.cached_tokens
                    elif isinstance(piece, p.Usage):
                        r.input_tokens = in0 + piece.prompt_tokens
                        r.cached_tokens = cached0 + piece.cached_tokens
                        r.output_tokens = out0 + piece.output_tokens
                        r.reasoning_tokens = reasoning0 + piece.reasoning_tokens
                    elif isinstance(piece, p.Finish):
                        finish = piece.reason
                    elif isinstance(piece, p.Failed):
                        return Outcome("failed", reason=piece.code, message=piece.message)
                    elif isinstance(piece, p.Cited):
                        await self._cite(piece.citation)
                    elif isinstance(piece, p.Wait):
                        if piece.seconds > 0:
                            await scripted_wait(r, piece.seconds)
                        if r.mailbox.stop is not None and r.stream.response.output:
                            sampled = False  # steered during the wait: nothing was sampled
                            return Outcome("incomplete", reason=r.mailbox.stop)
                    else:
                        await self._open(piece)
            finally:
                await stream.aclose()
        finally:
            if sampled:
                r.ctx.response_steps += 1
                r.work.mark("sampled")
        if finish in ("length", "content_filter"):
            await self._close(cut=True)
            reason = "max_output_tokens" if finish == "length" else finish
            return Outcome("incomplete", reason=reason)
        await self._close()
        return self.calls or Outcome("completed")

    async def _first_token(self) -> None:
        r = self.r
        r.first_token_pending = False
        r.work.mark("first_token")
        await r.sink.flush()

    async def _deltas(
        self, deltas: p.Deltas, run: Callable[..., DeltaRun[Any]], *, alone: bool = True
    ) -> None:
        """Deltas sent as runs of events: the step's first token alone (`alone`: it leaves at
        once; a call's arguments are not read before the call's end, which leaves with the
        pause or the terminal event), then at most RUN_MAX at a time (so a client's
        backpressure is felt between runs)."""
        r = self.r
        texts, clean, start = deltas.texts, deltas.plain, 0
        r.output_tokens += deltas.tokens
        if r.first_token_pending and texts:
            if alone:
                await r.emit_run(run(texts[:1], plain=clean))
                await self._first_token()
                start = 1
            else:
                r.first_token_pending = False
                r.work.mark("first_token")
        for at in range(start, len(texts), RUN_MAX):
            await r.emit_run(run(texts[at : at + RUN_MAX], plain=clean))

    async def _text(self, deltas: p.Deltas) -> None:
        r = self.r
        citations = self.citations
        while citations and deltas:  # up to each citation's end, then the annotation
            chars, cut = self.chars, len(deltas)
            for i, delta in enumerate(deltas.texts):
                chars += len(delta)
                if citations[0].end_index <= chars:
                    cut = i + 1
                    break
            await self._deltas(deltas.cut(0, cut), r.stream.text_run)
            self.chars += sum(map(len, deltas.texts[:cut]))
            deltas = deltas.cut(cut, len(deltas))
            while citations and citations[0].end_index <= self.chars:
                c = citations.pop(0)
                annotation = UrlCitation(
                    url=c.url, title=c.title, start_index=c.start_index, end_index=c.end_index
                )
                await r.emit(r.stream.annotate(annotation))
        if deltas:  # no citation is left to place: the characters need not be counted
            await self._deltas(deltas, r.stream.text_run)

    async def _cite(self, c: Citation) -> None:
        """An engine's citation of the text streamed so far (of an open message only)."""
        if self.kind != "text":
            return
        annotation = UrlCitation(
            url=c.url, title=c.title, start_index=c.start_index, end_index=c.end_index
        )
        await self.r.emit(self.r.stream.annotate(annotation))

    async def _args(self, deltas: p.Deltas) -> None:
        self.buffer.extend(deltas.texts)
        stream = self.r.stream
        run = stream.input_run if self.kind == "custom" else stream.arguments_run
        await self._deltas(deltas, functools.partial(run, self.index), alone=False)

    async def _summary(self, deltas: p.Deltas) -> None:
        r = self.r
        if not self.summary:
            self.summary = True
            await r.send(r.stream.begin_summary_part())
        await self._deltas(deltas.free(), r.stream.summary_run)

    async def _open(self, piece: p.Piece) -> None:
        """A piece that opens (or, for the reasoning item, ends) an output item."""
        r = self.r
        if isinstance(piece, p.Summary):
            return await self._summary(piece.deltas)
        if isinstance(piece, p.ReasoningEnd):
            return await self._close(hidden=piece.hidden)
        if self.kind:
            await self._close()
        self.index = r.stream.next_output_index
        if isinstance(piece, p.MessageStart):
            self.kind, self.chars = "text", 0
            cited = piece.citations
            self.citations = sorted(cited, key=lambda c: c.end_index) if cited else []
            await r.send(r.stream.begin_text(new_id("msg"), refusal=piece.refusal))
        elif isinstance(piece, p.CallStart):
            self.kind, self.name, self.buffer = "call", piece.name, []
            r.ctx.response_calls += 1
            call_id = piece.call_id or new_id("call")
            is_async = r.ctx.is_async(piece.name) or None
            await r.send(r.stream.begin_call(new_id("fc"), call_id, piece.name, is_async))
        elif isinstance(piece, p.CustomStart):
            self.kind, self.name, self.buffer = "custom", piece.name, []
            r.ctx.response_calls += 1
            call_id = piece.call_id or new_id("call")
            await r.send(r.stream.begin_custom(new_id("ctc"), call_id, piece.name))
        elif isinstance(piece, p.ClientCall):
            r.ctx.response_calls += 1
            template = piece.spec.call
            made = attrs.evolve(
                template,
                id=new_id(CLIENT_BY_CALL[type(template)].call_prefix),
                call_id=template.call_id or new_id("call"),
                status="completed",
            )
            await r.send(r.stream.client_call(made))
            self.calls.append(ToolCall(self.index, made, piece.spec))
        elif isinstance(piece, p.AgentCall):
            r.ctx.response_calls += 1
            spec = piece.spec
            call = MultiAgentCall(
                id=new_id("mac"),
                action=spec.action,  # type: ignore[arg-type]
                arguments=spec.arguments,
                call_id=new_id("call"),
            )
            await r.send(r.stream.whole_item(call))
            self.calls.append(ToolCall(self.index, r.stream.response.output[self.index], spec))
        elif isinstance(piece, p.Hosted):
            r.ctx.response_calls += 1
            tool = piece.spec.tool  # its item and opening events (protocol.hosted.HOSTED_TOOLS)
            item_id = new_id(tool.prefix)
            await r.send(r.stream.begin_hosted(tool, item_id, piece.spec.opening(item_id)))
            item = r.stream.response.output[self.index]
            self.calls.append(ToolCall(self.index, item, piece.spec))
        elif isinstance(piece, p.ReasoningStart):
            self.kind, self.item_id, self.buffer, self.spent = "reasoning", new_id("rs"), [], 0
            self.summary = False
            await r.send(r.stream.begin_reasoning(self.item_id))

    async def _close(self, *, cut: bool = False, hidden: str = "") -> None:
        """Close the open item: complete, or cut short (`cut`: the budget ran out)."""
        r, kind, index = self.r, self.kind, self.index
        self.kind = ""
        if kind == "text":
            await r.send(r.stream.end_text("incomplete" if cut else "completed"))
            r.ctx.extend([r.stream.response.output[index]], r.work, scan=False)
        elif kind == "call":
            arguments = "".join(self.buffer)
            if cut:
                await r.send(r.stream.end_call(index, arguments, status="incomplete"))
                return
            await r.send(r.stream.end_call(index, arguments))
            spec = FunctionCallSpec(name=self.name, arguments=arguments)
            self.calls.append(ToolCall(index, r.stream.response.output[index], spec))
        elif kind == "custom":
            text = "".join(self.buffer)
            await r.send(r.stream.end_custom(index, text, "incomplete" if cut else None))
            if not cut:
                custom = CustomCallSpec(name=self.name, input=text)
                self.calls.append(ToolCall(index, r.stream.response.output[index], custom))
        elif kind == "reasoning":
            if self.summary:
                await r.send(r.stream.end_summary_part())
            if cut:
                await r.send(r.stream.end_reasoning())
                return
            hidden = hidden or "".join(self.buffer)
            blob = None
            if r.reasoning is not None and r.reasoning.encrypted:
                sealed = Sealed(item_id=self.item_id, tokens=self.spent, text=hidden)
                blob = seal(sealed, self.env.secret)
            await r.send(r.stream.end_reasoning(blob))
            r.ctx.hidden[self.item_id] = hidden
            remember(self.env.thoughts, self.item_id, hidden)
            r.ctx.extend([r.stream.response.output[index]], r.work, scan=False)
