# Work accounting: counters and timed spans for every pipeline stage, per response (Work) and
# summed per process (Stats). Stages say what they processed (calls, items, tokens); spans say
# when. Experiments read these; nothing here changes behaviour.
from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

import attrs

STAGES = (
    "decode",  # decode + validate a request or frame (real CPU)
    "scan",  # safety scan of input not seen before (real CPU)
    "safety_service",  # the safety service's declared latency for that input
    "tokenize",  # render to tokens what is not rendered yet (real CPU)
    "routing",  # model routing (declared latency)
    "inference",  # simulated sampling: TTFT + prefill of uncached tokens + decode
    "hosted_tool",  # hosted tool service, e.g. web search (declared latency)
    "client_tool",  # waiting for the client to return tool output (append shape)
    "billing",  # usage/billing write (declared latency)
    "store",  # writing to / restoring from the response store
    "connect",  # connection setup (declared latency), per connection
)
#: Stages whose time is a declared latency (a named cost profile), not CPU work.
DECLARED = ("routing", "safety_service", "hosted_tool", "billing", "connect")
#: Stages whose time is real server CPU work.
CPU = ("decode", "scan", "tokenize", "store")


@attrs.define
class StageCount:
    calls: int = 0
    items: int = 0
    tokens: int = 0
    seconds: float = 0.0

    def add(self, other: StageCount) -> None:
        self.calls += other.calls
        self.items += other.items
        self.tokens += other.tokens
        self.seconds += other.seconds


@attrs.frozen
class Span:
    stage: str
    start: float
    end: float


def _empty_counts() -> dict[str, StageCount]:
    return {s: StageCount() for s in STAGES}


@attrs.define
class Work:
    """What one response (or one append rollout) cost, stage by stage."""

    counts: dict[str, StageCount] = attrs.field(factory=_empty_counts)
    spans: list[Span] = attrs.field(factory=list)
    keep_spans: bool = True
    ideal_inference_s: float = 0.0  # what the inference profile alone says sampling takes
    steps: list[tuple[int, float]] = attrs.field(factory=list)  # (prompt tokens, ideal s)

    @contextmanager
    def stage(self, name: str, *, items: int = 0, tokens: int = 0) -> Iterator[StageCount]:
        """Time a stage; the yielded count can be updated inside (e.g. tokens found)."""
        c = StageCount(calls=1, items=items, tokens=tokens)
        start = time.perf_counter()
        try:
            yield c
        finally:
            end = time.perf_counter()
            c.seconds = end - start
            self.counts[name].add(c)
            if self.keep_spans:
                self.spans.append(Span(name, start, end))

    def merge(self, other: Work) -> None:
        for name, c in other.counts.items():
            self.counts[name].add(c)
        self.ideal_inference_s += other.ideal_inference_s
        if self.keep_spans:
            self.spans.extend(other.spans)
            self.steps.extend(other.steps)

    def summary(self) -> dict[str, dict[str, float]]:
        return {k: attrs.asdict(v) for k, v in self.counts.items() if v.calls}


@attrs.define
class Stats:
    """Process-wide totals, updated when a response ends."""

    totals: Work = attrs.field(factory=lambda: Work(keep_spans=False))
    responses: int = 0
    billed: int = 0
    ws_connections: int = 0
    live_rollouts: int = 0  # append rollouts whose loop exists (running or suspended)
    events_sent: int = 0
    errors: dict[str, int] = attrs.field(factory=dict)

    def record(self, work: Work) -> None:
        self.responses += 1
        self.totals.merge(work)

    def error(self, code: str | None) -> None:
        key = code or "unknown"
        self.errors[key] = self.errors.get(key, 0) + 1
