# A workload's script at a real engine's pace, for `rollout compare --upstream URL`: what the
# model says is the script's (so every mode replays the same rollout, and modes compare), the work
# is the engine's. Each step sends the conversation as the chat dialect renders it, so the engine
# prefills it (with its own prefix cache), asks for exactly as many tokens as the step has
# (`max_tokens`), and releases each scripted token once the engine has streamed one. The prompt's
# usage and each step's inference time are the engine's, measured.
from __future__ import annotations

import time
from typing import Any

import orjson

from rollout.engine.loop import Pieces, Rollout
from rollout.engine.simulated import SimulatedModel
from rollout.model import pieces as p
from rollout.model.inference import Pacer, PrefixCache
from rollout.model.policy import Policy
from rollout.model.profiles import INFERENCE_PROFILES
from rollout.upstream import chat
from rollout.upstream.model import account_step
from rollout.upstream.pool import Broken, Events, Refused, UpstreamHttp, close
from rollout.upstream.target import UpstreamConfig

INSTANT = INFERENCE_PROFILES["instant"]


class _Engine:
    """The engine's stream, read one decoded token at a time."""

    def __init__(self, stream: Events) -> None:
        self.stream = stream
        self.ended = False
        self.usage: dict[str, Any] | None = None
        self._batch: list[bytes] = []

    async def tokens(self, n: int) -> None:
        """Wait until the engine has streamed `n` more tokens (or its stream ended)."""
        while n > 0 and not self.ended:
            if not self._batch:
                self._batch = (await self.stream.batch())[::-1]
                if not self._batch:
                    self.ended = True
                    return
            data = self._batch.pop()
            if data == b"[DONE]":
                self.ended = True
                return
            chunk = orjson.loads(data)
            if isinstance(chunk.get("usage"), dict):
                self.usage = chunk["usage"]
            for choice in chunk.get("choices") or ():
                delta = choice.get("delta") or {}
                if any(delta.get(k) is not None for k in ("content", "reasoning_content")):
                    n -= 1  # one streamed token (its text may be empty: part of a character)
                elif delta.get("tool_calls"):
                    n -= 1

    async def drain(self) -> None:
        while not self.ended:
            await self.tokens(1 << 30)


class EnginePaced:
    def __init__(self, policy: Policy, config: UpstreamConfig) -> None:
        self.script = SimulatedModel(policy, INSTANT, PrefixCache())
        self.config = config
        self.http = UpstreamHttp(config)

    async def open(self, r: Rollout) -> Pieces | None:
        del r
        return None

    async def aclose(self) -> None:
        await self.http.aclose()

    async def sample(self, r: Rollout) -> Pieces:
        step = self.script.step(r)
        if step.delay_s > 0:
            yield p.Wait(step.delay_s)
        # The script's pieces first (nothing waits: the instant profile), then their pace.
        scripted = [piece async for piece in self.script.output(r, step, Pacer(INSTANT))]
        tokens = sum(_tokens(piece) for piece in scripted)
        body = chat.request(r, self.config)
        body["max_tokens"] = max(1, tokens)
        with r.work.stage("inference") as stage:
            stage.tokens = r.ctx.token_count
            started = time.perf_counter()
            try:
                response = await self.http.open(body)
            except (Refused, Broken) as exc:
                message = exc.error.message if isinstance(exc, Refused) else str(exc)
                account_step(r.work, r.ctx.token_count, time.perf_counter() - started)
                yield p.Failed("server_error", message)
                return
            engine: _Engine | None = None
            try:
                idle = self.config.read_timeout_s
                engine = _Engine(Events(response, idle))
                for piece in scripted:
                    async for out in _paced(piece, engine):
                        yield out
                await engine.drain()
                u = engine.usage or {}
                details = u.get("prompt_tokens_details") or {}
                yield p.Usage(
                    int(u.get("prompt_tokens") or r.ctx.token_count),
                    int(details.get("cached_tokens") or 0),
                    tokens,
                    sum(piece.tokens for piece in scripted if isinstance(piece, p.Thought)),
                )
            except Broken as broken:
                yield p.Failed("server_error", str(broken))
            finally:
                await close(response, drain=engine is not None and engine.ended)
                account_step(r.work, r.ctx.token_count, time.perf_counter() - started)


def _tokens(piece: p.Piece) -> int:
    if isinstance(piece, p.Text | p.Args):
        return piece.deltas.tokens
    return piece.tokens if isinstance(piece, p.Thought) else 0


async def _paced(piece: p.Piece, engine: _Engine) -> Pieces:
    """`piece`, its tokens each released after one the engine decoded."""
    if isinstance(piece, p.Text | p.Args):
        deltas = piece.deltas
        for i in range(len(deltas)):
            await engine.tokens(deltas.count(i))
            yield type(piece)(deltas.cut(i, i + 1))
    elif isinstance(piece, p.Thought):
        await engine.tokens(piece.tokens)
        yield piece
    else:
        yield piece


__all__ = ["EnginePaced"]
