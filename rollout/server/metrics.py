# `GET /metrics` in the Prometheus text format (0.0.4): connections, responses in flight,
# suspended rollouts, events sent, per-stage work counters and latency histograms, errors by code,
# and with a shared engine (`rollout serve --engine`) its KV memory, queue and counters.
from __future__ import annotations

from collections.abc import Iterable, Mapping

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


#: The shared engine's gauges: (key of `SharedEngine.counts()`, metric name, help text).
ENGINE_GAUGES = (
    (
        "kv_used",
        "rollout_engine_kv_used_fraction",
        "Share of the KV blocks used by running sequences and pins (the evictable cache not "
        "counted, as vLLM's KV cache usage).",
    ),
    (
        "kv_held",
        "rollout_engine_kv_held_fraction",
        "Share of the KV blocks pinned by paused rollouts (the KV policy's).",
    ),
    (
        "kv_cached",
        "rollout_engine_kv_cached_fraction",
        "Share of the KV blocks cached but evictable (the prefix cache).",
    ),
    ("kv_peak_fraction", "rollout_engine_kv_peak_fraction", "Peak share of KV blocks in use."),
    ("kv_running", "rollout_engine_running_sequences", "Sequences in the engine's batch."),
    ("kv_waiting", "rollout_engine_waiting_sequences", "Sequences queued for admission."),
    ("kv_blocks", "rollout_engine_kv_blocks", "KV blocks of the engine's memory."),
)
#: The shared engine's counters: (key of `SharedEngine.counts()`, metric name, help text).
ENGINE_COUNTERS = (
    ("admitted", "rollout_engine_admitted_total", "Sequences admitted (re-admissions too)."),
    ("stopped", "rollout_engine_stopped_total", "Sequences that decoded their output."),
    ("steps", "rollout_engine_steps_total", "Engine steps run."),
    ("preemptions", "rollout_engine_preemptions_total", "Sequences preempted (recompute)."),
    ("unpinned", "rollout_engine_unpinned_total", "Pins released early for running requests."),
    ("prefill_tokens", "rollout_engine_prefill_tokens_total", "Prompt tokens prefilled."),
    (
        "recomputed_tokens",
        "rollout_engine_recomputed_tokens_total",
        "Prefilled tokens whose KV the rollout had held before.",
    ),
    (
        "cached_tokens",
        "rollout_engine_cached_tokens_total",
        "Prompt tokens credited from the prefix cache or a held KV.",
    ),
    ("decode_tokens", "rollout_engine_decode_tokens_total", "Tokens decoded."),
    (
        "offloaded_tokens",
        "rollout_engine_offloaded_tokens_total",
        "Tokens of KV copied to host memory.",
    ),
    (
        "reloaded_tokens",
        "rollout_engine_reloaded_tokens_total",
        "Tokens of KV copied back from host memory.",
    ),
    ("evicted_blocks", "rollout_engine_evicted_blocks_total", "KV blocks evicted."),
    ("busy_s", "rollout_engine_busy_seconds_total", "Seconds the engine ran steps."),
    ("queue_s", "rollout_engine_queue_seconds_total", "Seconds sequences waited for admission."),
)


def render(
    stats: Stats,
    *,
    responses_in_flight: int,
    suspended: int,
    live: int,
    engine: Mapping[str, float] | None = None,
) -> str:
    """The metrics text; `engine` is the shared engine's `counts()`, if the server has one."""
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
        *(_engine(engine) if engine is not None else []),
    ]
    return "\n".join(lines) + "\n"


def _metric(name: str, kind: str, help_: str, samples: Iterable[tuple[str, float]]) -> list[str]:
    """One metric: its HELP and TYPE lines, then a line per (labels, value) sample."""
    lines = [f"# HELP {name} {help_}", f"# TYPE {name} {kind}"]
    lines.extend(f"{name}{labels} {_number(value)}" for labels, value in samples)
    return lines


def _number(value: float) -> str:
    """A sample's value: an integer exactly (a count past a million too), a float to 15 digits."""
    return str(value) if isinstance(value, int) else f"{value:.15g}"


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


def _engine(counts: Mapping[str, float]) -> list[str]:
    """The shared engine's gauges and counters."""
    lines: list[str] = []
    for kinds, table in (("gauge", ENGINE_GAUGES), ("counter", ENGINE_COUNTERS)):
        for key, name, help_ in table:
            lines += _metric(name, kinds, help_, [("", counts[key])])
    return lines
