# Fault injection for experiments and test rigs: an error rate per error code, a disconnect after
# N events of a response (DisconnectingSink), and added latency before sampling; each response's
# faults are drawn from a seeded generator in the order responses start, so a run is
# reproducible. Errors fail the way the real API fails: rate limits, quota, server errors and
# overload are refusals before any byte of a stream (HTTP 429/500/503 with Retry-After, or a
# WebSocket `error` event with that status), so clients' retry logic runs; `model_error` fails
# inside the stream (`response.failed`), as a model failure does.
from __future__ import annotations

import random
from typing import Any

import attrs

from protocol.deltas import DeltaRun
from protocol.errors import ProtocolError
from protocol.events import Event
from rollout.engine.loop import Disconnected, PassOn

#: Codes a fault can inject, with the message a real server would give.
MESSAGES = {
    "server_error": "The server had an error while processing your request.",
    "rate_limit_exceeded": "Rate limit reached for requests. Please try again later.",
    "insufficient_quota": "You exceeded your current quota, please check your plan and billing "
    "details.",
    "server_overloaded": "The engine is currently overloaded, please try again later.",
    "model_error": "The model failed to generate a response.",
}
#: Codes refused before the response starts: code -> (HTTP status, error type).
REFUSED: dict[str, tuple[int, str]] = {
    "rate_limit_exceeded": (429, "requests"),
    "insufficient_quota": (429, "insufficient_quota"),
    "server_error": (500, "server_error"),
    "server_overloaded": (503, "server_error"),
}
RATE_LIMIT_HEADERS = {
    "retry-after": "1",
    "x-ratelimit-limit-requests": "500",
    "x-ratelimit-remaining-requests": "0",
    "x-ratelimit-reset-requests": "1s",
    "x-ratelimit-limit-tokens": "200000",
    "x-ratelimit-remaining-tokens": "0",
    "x-ratelimit-reset-tokens": "1s",
}


@attrs.frozen(kw_only=True)
class FaultPlan:
    """The faults of one response."""

    error: str | None = None
    disconnect_after: int | None = None  # events of the response sent before the connection drops
    latency_s: float = 0.0

    def refusal(self) -> ProtocolError | None:
        """The refusal this plan's error stands for, if it fails before the stream starts."""
        if self.error not in REFUSED:
            return None
        status, type_ = REFUSED[self.error]
        headers = RATE_LIMIT_HEADERS if status == 429 else {"retry-after": "1"}
        return ProtocolError(
            message=MESSAGES[self.error],
            type=type_,
            code=self.error,
            status=status,
            headers=dict(headers),
        )


NO_FAULTS = FaultPlan()


@attrs.define(kw_only=True)
class Faults:
    errors: dict[str, float] = attrs.field(factory=dict)  # code -> probability per response
    disconnect_after: int | None = None
    disconnect_rate: float = 1.0  # share of responses that get the disconnect
    latency_s: float = 0.0
    seed: int = 0
    queued: list[FaultPlan] = attrs.field(factory=list)  # one-shot plans for the next responses
    _drawn: int = 0

    def __attrs_post_init__(self) -> None:
        for code, rate in self.errors.items():
            if code not in MESSAGES:
                raise ValueError(f"unknown fault code {code!r} (known: {', '.join(MESSAGES)})")
            if not 0.0 <= rate <= 1.0:
                raise ValueError(f"fault rate for {code} must be between 0 and 1")
        if sum(self.errors.values()) > 1.0:
            raise ValueError("fault error rates add up to more than 1")
        if self.disconnect_after is not None and self.disconnect_after < 0:
            raise ValueError("disconnect_after must be >= 0")
        if self.latency_s < 0:
            raise ValueError("fault latency must be >= 0")

    def next_plan(self) -> FaultPlan:
        """The faults of the next response: a queued one-shot plan, else the n-th draw of the
        seed (deterministic)."""
        if self.queued:
            return self.queued.pop(0)
        rng = random.Random(f"{self.seed}:{self._drawn}")
        self._drawn += 1
        roll = rng.random()
        error = None
        for code, rate in sorted(self.errors.items()):
            if roll < rate:
                error = code
                break
            roll -= rate
        disconnect = None
        if self.disconnect_after is not None and rng.random() < self.disconnect_rate:
            disconnect = self.disconnect_after
        return FaultPlan(error=error, disconnect_after=disconnect, latency_s=self.latency_s)


def parse_errors(specs: list[str]) -> dict[str, float]:
    """`CODE=RATE` strings (command line) into a mapping."""
    out: dict[str, float] = {}
    for spec in specs:
        code, sep, rate = spec.partition("=")
        try:
            out[code] = float(rate)
        except ValueError:
            raise ValueError(
                f"fault {spec!r}: expected CODE=RATE, e.g. server_error=0.05"
            ) from None
        if not sep:
            raise ValueError(f"fault {spec!r}: expected CODE=RATE, e.g. server_error=0.05")
    return out


@attrs.define(eq=False)
class DisconnectingSink(PassOn):
    """An injected fault: the connection drops once `after` events of the response were sent."""

    after: int
    sent: int = 0

    async def emit(self, event: Event) -> None:
        if self.sent >= self.after:
            await self.inner.close()
            raise Disconnected()
        await self.inner.emit(event)
        self.sent += 1

    async def emit_run(self, run: DeltaRun[Any]) -> None:
        head, tail = run.split(max(0, self.after - self.sent))
        if head.deltas:
            await self.inner.emit_run(head)
            self.sent += len(head)
        if tail.deltas:
            await self.emit(tail.events()[0])  # drops the connection
