# What the sweeps of `rollout compare` measure, as plain data: a rollout in one mode (RunResult),
# a point of the chain-length sweep (Point) and a Codex CLI run (CodexRun). The sweeps make them
# and write them out; the figures (rollout.experiments.figures.plots) read them; nothing here runs.
from __future__ import annotations

import statistics
from typing import Any

import attrs


@attrs.define
class RunResult:
    """One rollout in one mode: client-side timings and the server's work."""

    mode: str
    profile: str
    repeat: int
    seconds: float
    client_s: float
    inference_s: float  # ideal inference time the profile dictates for this rollout
    cpu_s: float  # server CPU stages
    declared_s: float  # declared service latencies (some overlapped, e.g. background billing)
    turns: int
    ttft_s: list[float]  # per turn: request sent to first token (text or call) received
    turn_s: list[float]  # per turn: request sent to pause or terminal event
    step_prompt: list[int]  # per sampling step: prompt tokens (history length)
    step_ideal_s: list[float]  # per sampling step: ideal inference seconds
    counts: dict[str, dict[str, float]]
    billed: int
    bytes_sent: int
    bytes_received: int
    text: str
    calls: list[tuple[str, str]]
    steer_s: float | None = None  # ws-steer: steer sent -> first token of the response taking it
    trace: list[dict[str, Any]] = attrs.field(factory=list, repr=False)
    marks: list[tuple[str, float]] = attrs.field(factory=list, repr=False)

    @property
    def ideal_s(self) -> float:
        return self.inference_s + self.client_s

    @property
    def overhead_s(self) -> float:
        return self.seconds - self.ideal_s

    def to_json(self, full: bool = False) -> dict[str, Any]:
        """Its fields as JSON values, with the derived overhead and ideal; the trace and the
        marks only when `full` (a worker's answer; results.json leaves them out)."""
        data = attrs.asdict(self)
        if not full:
            data.pop("trace")
            data.pop("marks")
        data["overhead_s"] = self.overhead_s
        data["ideal_s"] = self.ideal_s
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunResult:
        """A RunResult from `to_json`'s output (fields it lacks take their defaults)."""
        names = {f.name for f in attrs.fields(cls)}
        fields = {k: v for k, v in data.items() if k in names}
        fields["calls"] = [tuple(c) for c in fields.get("calls", [])]
        fields["marks"] = [tuple(m) for m in fields.get("marks", [])]
        return cls(**fields)


@attrs.frozen
class Point:
    """One (profile, chain length, mode): per repeat, the median TTFT over the rollout's turns,
    the end-to-end time per turn and the API work's share of end-to-end."""

    profile: str
    turns: int
    mode: str
    ttft_s: list[float]
    per_turn_s: list[float]
    api_share: list[float]

    @property
    def ttft(self) -> float:
        return statistics.median(self.ttft_s)

    @property
    def per_turn(self) -> float:
        return statistics.median(self.per_turn_s)

    @property
    def share(self) -> float:
        return statistics.median(self.api_share)


@attrs.define
class CodexRun:
    transport: str
    repeat: int
    seconds: float  # the `codex exec` process, start to exit
    turns: int  # model responses that sampled (a prewarm does not)
    inference_s: float  # the profile's ideal inference for those turns
    server_s: float  # the server's time in them: request received to terminal event
    loop_s: float  # the agent loop: first request received to the last terminal event
    commands: int  # commands Codex ran (its command_execution items)
    failed_commands: int
    final: str  # Codex's last agent message

    @property
    def api_s(self) -> float:
        return max(0.0, self.server_s - self.inference_s)

    @property
    def client_s(self) -> float:
        """The client's side of the loop: Codex between responses and its tools."""
        return max(0.0, self.loop_s - self.server_s)

    @property
    def startup_s(self) -> float:
        """Codex before its first request and after the last response (start, exit)."""
        return max(0.0, self.seconds - self.loop_s)

    @property
    def per_turn_s(self) -> float:
        return self.seconds / max(1, self.turns)


__all__ = ["CodexRun", "Point", "RunResult"]
