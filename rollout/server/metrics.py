# `GET /metrics` in the Prometheus text format (0.0.4): connections, responses in flight,
# suspended rollouts, events sent, per-stage work counters and latency histograms, errors by code.
from __future__ import annotations

from collections.abc import Iterable

from rollout.conversation.work import BUCKETS, STAGES, Histogram, Stats


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


#: The per-stage work counters: (field of the stage's counts, help text).
STAGE_COUNTERS = (
    ("calls", "Calls of each pipeline stage."),
    ("items", "Items processed by each pipeline stage."),
    ("tokens", "Tokens processed by each pipeline stage."),
    ("seconds", "Seconds spent in each pipeline stage."),
)


def render(stats: Stats, *, responses_in_flight: int, suspended: int, live: int) -> str:
    lines = [
        *_gauges(stats, responses_in_flight=responses_in_flight, suspended=suspended, live=live),
        *_counters(stats),
        *_stage_latency(stats),
        *_metric(
            "rollout_errors_total",
            "counter",
            "Errors returned, by code.",
            [(f'{{code="{_escape(code)}"}}', n) for code, n in sorted(stats.errors.items())],
        ),
    ]
    return "\n".join(lines) + "\n"


def _metric(name: str, kind: str, help_: str, samples: Iterable[tuple[str, float]]) -> list[str]:
    """One metric: its HELP and TYPE lines, then a line per (labels, value) sample."""
    lines = [f"# HELP {name} {help_}", f"# TYPE {name} {kind}"]
    lines.extend(f"{name}{labels} {value:g}" for labels, value in samples)
    return lines


def _gauges(stats: Stats, *, responses_in_flight: int, suspended: int, live: int) -> list[str]:
    """Connections, request bodies, requests and responses in flight, and live append rollouts."""
    gauges: list[tuple[str, str, float]] = [
        ("rollout_websocket_connections", "Open WebSocket connections.", stats.ws_connections),
        (
            "rollout_open_connections",
            "Open TCP connections (HTTP and WebSocket).",
            stats.open_connections,
        ),
        (
            "rollout_request_body_bytes",
            "Bytes of request bodies held by the requests reading them.",
            stats.body_bytes_in_flight,
        ),
        ("rollout_http_requests_in_flight", "HTTP requests being answered.", stats.http_in_flight),
        (
            "rollout_responses_in_flight",
            "Responses whose sampling loop is running.",
            responses_in_flight,
        ),
    ]
    lines: list[str] = []
    for name, help_, value in gauges:
        lines += _metric(name, "gauge", help_, [("", value)])
    lines += _metric(
        "rollout_append_rollouts",
        "gauge",
        "Live append rollouts, by state.",
        [('{state="suspended"}', suspended), ('{state="running"}', live - suspended)],
    )
    return lines


def _counters(stats: Stats) -> list[str]:
    """Responses finished, billing calls, events sent, and the per-stage work counters."""
    lines = [
        *_metric(
            "rollout_responses_total", "counter", "Responses finished.", [("", stats.responses)]
        ),
        *_metric("rollout_billed_total", "counter", "Billing calls made.", [("", stats.billed)]),
        *_metric("rollout_events_sent_total", "counter", "Events sent.", [("", stats.events_sent)]),
    ]
    counts = stats.totals.counts
    for field, help_ in STAGE_COUNTERS:
        lines += _metric(
            f"rollout_stage_{field}_total",
            "counter",
            help_,
            [(f'{{stage="{s}"}}', getattr(counts[s], field)) for s in STAGES],
        )
    return lines


def _stage_latency(stats: Stats) -> list[str]:
    """The per-stage latency histograms, with cumulative buckets as Prometheus reads them."""
    name = "rollout_stage_latency_seconds"
    lines = [
        f"# HELP {name} Time per response in each pipeline stage.",
        f"# TYPE {name} histogram",
    ]
    for stage in STAGES:
        h = stats.latency.get(stage, Histogram())
        cumulative = 0
        for bound, count in zip(BUCKETS, h.counts, strict=True):
            cumulative += count
            lines.append(f'{name}_bucket{{stage="{stage}",le="{bound:g}"}} {cumulative}')
        lines.append(f'{name}_bucket{{stage="{stage}",le="+Inf"}} {h.total}')
        lines.append(f'{name}_sum{{stage="{stage}"}} {h.sum:g}')
        lines.append(f'{name}_count{{stage="{stage}"}} {h.total}')
    return lines
