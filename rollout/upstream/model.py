# A real inference engine as the loop's model: each sampling step is one streamed request to an
# OpenAI-compatible engine (chat completions or Responses), its chunks translated into pieces as
# they arrive. A response's first step is opened before the response's first event, so the
# engine's refusal is the client's (a 429 stays a retryable 429 with its Retry-After); later
# refusals, timeouts and broken streams end the response `failed`. Closing a step's stream (a
# cancel, a client gone) drops its connection, which aborts the engine's request. The step's
# time from request to last chunk is its inference time (what compare calls ideal). A steer
# that arrives before a later step's first output ends the wait for the engine at once (its
# request is dropped, nothing was sampled), as it ends a scripted step's think time.
from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import orjson
import trio

from protocol.errors import ProtocolError, clip
from rollout.conversation import tokens as tok
from rollout.conversation.work import Work
from rollout.engine.loop import Pieces, Rollout
from rollout.model import pieces as p
from rollout.upstream import chat, hosted, responses
from rollout.upstream.pool import (
    Broken,
    Events,
    Refused,
    UpstreamHttp,
    close,
    is_whole,
    whole_body,
)
from rollout.upstream.target import UpstreamConfig
from rollout.upstream.wire import Response

log = logging.getLogger("rollout")


class _Translator(Protocol):
    def feed(self, data: dict[str, Any]) -> list[p.Piece]: ...
    def text(self, data: dict[str, Any]) -> str | None: ...
    def whole(self, data: dict[str, Any]) -> list[p.Piece]: ...
    def end(self) -> list[p.Piece]: ...


class _Chat:
    def __init__(self, r: Rollout) -> None:
        self.stream = chat.ChatStream(
            declared=frozenset(r.ctx.function_tools), hosted=hosted.names(r.ctx)
        )
        self.prompt = r.ctx.token_count  # if the engine reports no usage: rollout's count

    def feed(self, data: dict[str, Any]) -> list[p.Piece]:
        return self.stream.chunk(data)

    def text(self, data: dict[str, Any]) -> str | None:
        return self.stream.plain_text(data)

    def whole(self, data: dict[str, Any]) -> list[p.Piece]:
        return self.stream.chunk(chat.as_chunk(data))

    def end(self) -> list[p.Piece]:
        return self.stream.end(self.prompt, tok.count)


class _Responses:
    def __init__(self, r: Rollout) -> None:
        self.stream = responses.ResponsesStream(
            declared=frozenset(r.ctx.function_tools), hosted=hosted.names(r.ctx)
        )

    def feed(self, data: dict[str, Any]) -> list[p.Piece]:
        return self.stream.event(data)

    def text(self, data: dict[str, Any]) -> str | None:
        del data
        return None

    def whole(self, data: dict[str, Any]) -> list[p.Piece]:
        return [piece for event in responses.events_of(data) for piece in self.stream.event(event)]

    def end(self) -> list[p.Piece]:
        if self.stream.done:
            return []
        return [p.Failed("server_error", "The upstream engine's stream ended before the response.")]


class UpstreamModel:
    """`Engine(model=UpstreamModel(UpstreamConfig(url=...)))`: inference by a real engine."""

    counts_prompt = True  # the engine prefills and caches the prompt: rollout only counts it

    def __init__(self, config: UpstreamConfig) -> None:
        self.config = config
        self.http = UpstreamHttp(config)
        self.requests = 0  # requests sent to the engine
        self.aborted = 0  # streams closed before the engine finished them

    async def aclose(self) -> None:
        await self.http.aclose()

    def _body(self, r: Rollout) -> dict[str, Any]:
        if self.config.api == "chat":
            return chat.request(r, self.config)
        return responses.request(r, self.config)

    def _translator(self, r: Rollout) -> _Translator:
        return _Chat(r) if self.config.api == "chat" else _Responses(r)

    async def open(self, r: Rollout) -> Pieces | None:
        """The first step: sent now, before any event; an error status raises (Refused's
        ProtocolError) and becomes the request's refusal."""
        return await self._step(r, refuse=True)

    async def sample(self, r: Rollout) -> Pieces:
        left = r.budget_left
        if left is not None and left <= 0:  # the budget is spent: nothing to ask the engine
            yield p.Finish("length")
            return
        if not r.stream.response.output:  # nothing to end the response at: no steer ends it
            stream = await self._step(r, refuse=False)
        else:
            sent = self.requests
            with _steerable(r) as steered:
                stream = await self._step(r, refuse=False)
            if steered.cancelled_caught:
                self.aborted += self.requests - sent  # its request, if it went, is dropped
                yield p.Wait(0)  # given up for a steer before the step's first output
                return
        async with contextlib.aclosing(stream):
            async for piece in stream:
                yield piece

    async def _step(self, r: Rollout, *, refuse: bool) -> Pieces:
        """Send one step's request and wait for the first event of its answer (at most
        `first_byte_timeout_s`); its pieces, read as they arrive. A refusal, or an engine that
        is unreachable, silent or sends nothing, raises the client's error (a retryable 500 for
        all but the engine's own refusals) when `refuse` (nothing has been sent to the client
        yet), else it is the step's failure."""
        spec = hosted.approved(r.ctx)
        if spec is not None:  # the call the client approved runs; the engine takes no step
            return _given([p.Hosted(spec), p.Usage(0), p.Finish("stop")])
        stage = r.work.stage("inference")
        stage.__enter__()
        started = time.perf_counter()
        try:
            opened = await self._opened(r)
        except Refused as refused:
            if refuse:
                stage.__exit__(None, None, None)
                raise refused.error from None
            error = refused.error
            return self._failed(r, stage, started, error.message, error.code)
        except Broken as broken:
            if refuse:
                stage.__exit__(None, None, None)
                raise unreached(str(broken)) from None
            return self._failed(r, stage, started, str(broken))
        except BaseException:
            stage.__exit__(None, None, None)
            raise
        return self._read(r, *opened, stage, started)

    async def _opened(self, r: Rollout) -> tuple[Response, Events | None, list[bytes]]:
        """The step's answer, its events and the first batch of their data (a whole JSON
        answer: its body, and no events), within the first-byte deadline."""
        deadline = self.config.first_byte_timeout_s
        with trio.move_on_after(deadline) as waited:
            response = await self._send(r)
            try:
                stream: Events | None = None
                if is_whole(response):
                    first = [await whole_body(response, self.config.read_timeout_s)]
                else:
                    stream = Events(response, self.config.read_timeout_s)
                    first = await stream.batch()
                if not first or not first[0]:
                    raise Broken("The upstream engine's answer ended before its first event.")
                return response, stream, first
            except BaseException:
                await close(response)
                raise
        assert waited.cancelled_caught
        raise Broken(
            f"The upstream engine sent nothing within {deadline:g} s "
            "(--upstream-first-byte-timeout)."
        )

    async def _send(self, r: Rollout) -> Response:
        body = self._body(r)
        self.requests += 1
        return await self.http.open(body)

    async def _failed(
        self, r: Rollout, stage: Any, started: float, message: str, code: str | None = None
    ) -> Pieces:
        """A step the engine refused (after the response started) or never answered."""
        try:
            yield p.Failed(code or "server_error", message)
        finally:
            account_step(r.work, r.ctx.token_count, time.perf_counter() - started)
            stage.__exit__(None, None, None)

    async def _read(
        self,
        r: Rollout,
        response: Response,
        stream: Events | None,
        first: list[bytes],
        stage: Any,
        started: float,
    ) -> Pieces:
        """The engine's answer as pieces, from its `first` batch of events' data (or its whole
        JSON body) until its end (or until the loop stops reading): the pieces of one batch
        (one network read) go out merged, so a burst of deltas is one run of events."""
        translate = self._translator(r)
        finished = ended = False
        whole = stream is None
        quiet = bool(r.stream.response.output)  # a steer may end it until its first output
        try:
            batch = first
            while batch:
                pieces, ended = _batch(translate, batch, whole)
                for piece in p.merged(pieces):
                    quiet = False
                    yield piece
                    if isinstance(piece, p.Failed):
                        finished = True
                        return
                if ended or stream is None:
                    break
                if not quiet:
                    batch = await stream.batch()
                    continue
                with _steerable(r) as steered:
                    batch = await stream.batch()
                if steered.cancelled_caught:
                    yield p.Wait(0)  # given up for a steer before the step's first output
                    return
            finished = True
            for piece in _checked(translate.end):
                yield piece
        except Broken as broken:
            finished = True
            yield p.Failed("server_error", str(broken))
        finally:
            if not finished:
                self.aborted += 1
            await close(response, drain=ended)
            account_step(r.work, r.ctx.token_count, time.perf_counter() - started)
            stage.__exit__(None, None, None)


async def _given(pieces: list[p.Piece]) -> Pieces:
    """A step of these pieces, none of them the engine's."""
    for piece in pieces:
        yield piece


@contextlib.contextmanager
def _steerable(r: Rollout) -> Iterator[trio.CancelScope]:
    """A wait for the engine that a steer ends (the rollout's mailbox cancels it);
    `cancelled_caught` says whether one did. One cancel scope: nothing else is started."""
    scope = trio.CancelScope()
    box = r.mailbox
    if box.stop is not None:
        scope.cancel()
    with scope:
        box.interruptible = scope
        try:
            yield scope
        finally:
            box.interruptible = None


def unreached(why: str) -> ProtocolError:
    """The client's error for an engine that could not be reached, or sent nothing in time,
    before anything was sent to the client: a 500 `server_error`, which clients retry (as for
    the engine's own 5xx)."""
    return ProtocolError(message=why, type="server_error", code="server_error", status=500)


def _batch(translate: _Translator, batch: list[bytes], whole: bool) -> tuple[list[p.Piece], bool]:
    """The pieces of one batch of events' data (one network read), and whether it held the
    stream's end (`[DONE]`). A stretch of chunks that only continue the open message becomes one
    Text piece, with no piece made per chunk (the common chunk of a long answer)."""
    pieces: list[p.Piece] = []
    texts: list[str] = []
    for data in batch:
        if data == b"[DONE]":
            _flush(texts, pieces)
            return pieces, True
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            _flush(texts, pieces)
            pieces.append(
                p.Failed("server_error", "The upstream engine sent an event that is not JSON.")
            )
            continue
        if not whole and type(value) is dict:
            try:
                text = translate.text(value)
            except (AttributeError, TypeError, ValueError, KeyError, IndexError):
                text = None  # the slow path says what is wrong with it
            if text is not None:
                texts.append(text)
                continue
        if texts:
            _flush(texts, pieces)
        pieces.extend(_parsed(translate, data, value, whole))
    if texts:
        _flush(texts, pieces)
    return pieces, False


def _flush(texts: list[str], pieces: list[p.Piece]) -> None:
    if texts:
        pieces.append(p.Text(p.Deltas(texts[:], [0] * len(texts))))
        texts.clear()


def _parsed(translate: _Translator, data: bytes, value: object, whole: bool) -> list[p.Piece]:
    """One event's (or a `whole` answer's) pieces; a failure for one that is not a JSON object
    or whose fields have the wrong types (logged once, with what was sent)."""
    if not isinstance(value, dict):
        return [_invalid(data)]
    try:
        return translate.whole(value) if whole else translate.feed(value)
    except (AttributeError, TypeError, ValueError, KeyError, IndexError):
        return [_invalid(data)]


def _checked(translate: Callable[[], list[p.Piece]], data: bytes = b"") -> list[p.Piece]:
    try:
        return translate()
    except (AttributeError, TypeError, ValueError, KeyError, IndexError):
        return [_invalid(data)]


def _invalid(data: bytes) -> p.Failed:
    shown = clip(data.decode("utf-8", "replace"), 200) if data else "its usage or end"
    log.warning("upstream engine sent an invalid event: %s", shown)
    return p.Failed("server_error", f"The upstream engine sent an invalid event: {shown}")


def account_step(work: Work, prompt: int, seconds: float) -> None:
    """The step's inference time, as measured: from the request sent to its stream's end."""
    work.ideal_inference_s += seconds
    if work.keep_spans:
        work.steps.append((prompt, seconds))


__all__ = ["UpstreamModel"]
