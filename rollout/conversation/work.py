# Work accounting: counters and timed spans for every pipeline stage, per response (Work) and
# summed per process (Stats). Stages say what they processed (calls, items, tokens); spans say
# when. Experiments read these; nothing here changes behaviour.
from __future__ import annotations

import bisect
import time
from collections import defaultdict

import attrs

BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


@attrs.define
class Histogram:
    counts: list[int] = attrs.field(factory=lambda: [0] * len(BUCKETS))
    total: int = 0
    sum: float = 0.0

    def observe(self, value: float) -> None:
        self.total += 1
        self.sum += value
        i = bisect.bisect_left(BUCKETS, value)  # the first bound at or above it, if any
        if i < len(BUCKETS) and value <= BUCKETS[i]:
            self.counts[i] += 1


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
    "fault",  # latency added by fault injection
)
#: Stages whose time is a declared latency (a named cost profile), not CPU work.
DECLARED = ("routing", "safety_service", "hosted_tool", "billing", "connect", "fault")
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

    # Filled as stages run (a missing stage reads as zero): a response touches a few of them,
    # and a dozen counters made for each would be most of what a new Work costs.
    counts: dict[str, StageCount] = attrs.field(factory=lambda: defaultdict(StageCount))
    spans: list[Span] = attrs.field(factory=list)
    keep_spans: bool = True
    ideal_inference_s: float = 0.0  # what the inference profile alone says sampling takes
    steps: list[tuple[int, float]] = attrs.field(factory=list)  # (prompt tokens, ideal s)
    created: float = attrs.field(factory=time.perf_counter)  # when the request arrived
    # Points on a response's timeline (kept with spans): "received" (a request or an append
    # arrived), "first_token", "sampled" (a step's last token), "paused", "terminal".
    marks: list[tuple[str, float]] = attrs.field(factory=list)
    #: A multi-agent response's subagents' own work, by agent (each also merged into this);
    #: None for every other response.
    agents: dict[str, Work] | None = None

    def mark(self, name: str, at: float | None = None) -> None:
        if self.keep_spans:
            self.marks.append((name, time.perf_counter() if at is None else at))

    def stage(self, name: str, *, items: int = 0, tokens: int = 0) -> _Stage:
        """Time a stage (`with work.stage("scan") as c:`); its `tokens` can be set inside
        (e.g. tokens found)."""
        return _Stage(self, name, items, tokens)

    def merge(self, other: Work) -> None:
        counts = self.counts
        for name, c in other.counts.items():
            mine = counts[name]  # (StageCount.add, inline: a response's end merges a few)
            mine.calls += c.calls
            mine.items += c.items
            mine.tokens += c.tokens
            mine.seconds += c.seconds
        self.ideal_inference_s += other.ideal_inference_s
        if self.keep_spans:
            self.spans.extend(other.spans)
            self.steps.extend(other.steps)
            self.marks.extend(other.marks)

    def summary(self) -> dict[str, dict[str, float]]:
        return {k: attrs.asdict(v) for k, v in self.counts.items() if v.calls}


class _Stage:
    """The context manager behind Work.stage (a class: cheaper than a generator per stage). It
    adds itself to the Work's count of the stage as it exits."""

    __slots__ = ("items", "name", "start", "tokens", "work")

    def __init__(self, work: Work, name: str, items: int, tokens: int) -> None:
        self.work = work
        self.name = name
        self.items = items
        self.tokens = tokens
        self.start = 0.0

    def __enter__(self) -> _Stage:
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        end = time.perf_counter()
        work = self.work
        count = work.counts[self.name]
        count.calls += 1
        count.items += self.items
        count.tokens += self.tokens
        count.seconds += end - self.start
        if work.keep_spans:
            work.spans.append(Span(self.name, self.start, end))


@attrs.define
class Stats:
    """Process-wide totals, updated when a response ends."""

    totals: Work = attrs.field(factory=lambda: Work(_empty_counts(), keep_spans=False))
    responses: int = 0
    billed: int = 0
    ws_connections: int = 0
    live_rollouts: int = 0  # append rollouts whose loop exists (running or suspended)
    http_in_flight: int = 0  # HTTP requests being answered
    open_connections: int = 0  # TCP connections being served (HTTP and WebSocket)
    body_bytes_in_flight: int = 0  # bytes of request bodies held by the requests reading them
    events_sent: int = 0
    errors: dict[str, int] = attrs.field(factory=dict)
    latency: dict[str, Histogram] = attrs.field(factory=dict)  # per response, per stage

    def record(self, work: Work) -> None:
        self.responses += 1
        self.totals.merge(work)
        latency = self.latency
        for stage, count in work.counts.items():
            if count.calls:
                histogram = latency.get(stage)
                if histogram is None:
                    histogram = latency[stage] = Histogram()
                histogram.observe(count.seconds)

    def error(self, code: str | None) -> None:
        key = code or "unknown"
        self.errors[key] = self.errors.get(key, 0) + 1

    def new_work(self) -> Work:
        """A request's Work: with spans and marks only if the totals keep them (an experiment's
        do; a server's drop them when they are merged, so they are not made)."""
        return Work(keep_spans=self.totals.keep_spans)
