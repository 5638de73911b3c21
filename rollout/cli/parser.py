# The `rollout` command line's arguments: every subcommand and flag, with help that says what each
# does and its default (those of `rollout compare` and serve's shared-engine ones in their own
# modules). rollout.cli.commands runs them; docs/reference.md is generated from this parser
# (docs/gen_reference.py).
from __future__ import annotations

import argparse

from rollout.cli.compare_flags import add_compare
from rollout.cli.engine_flags import add_engine_flags
from rollout.model.profiles import COST_PROFILES, INFERENCE_PROFILES
from rollout.service.config import ServerConfig
from rollout.upstream.target import APIS


class DefaultsOnceHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Says each flag's default once: `(default: X)` after its help, unless the help already
    names it (`default:` or `%(default)s` in it) or the default says nothing (None, False, an
    empty string or list: a flag that is unset or off unless given)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text, default = action.help, action.default
        if text is None or "default:" in text.lower() or "%(default)" in text:
            return text
        if default is None or default is False or default in ("", [], ()):
            return text
        return super()._get_help_string(action)


def config_flag(s: argparse.ArgumentParser, flag: str, field: str, metavar: str, help: str) -> None:
    """A flag that sets a ServerConfig field: its default and its type are the field's."""
    default = getattr(ServerConfig(), field)
    s.add_argument(flag, type=type(default), default=default, metavar=metavar, help=help)


def parser() -> argparse.ArgumentParser:
    """The `rollout` command line: one subparser per subcommand, added in the order `--help`
    lists them."""
    parser = argparse.ArgumentParser(
        prog="rollout",
        description="A Responses API server with a simulated model, for measuring agent-rollout "
        "protocol shapes.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_serve(sub)
    add_compare(sub)
    _add_bench(sub)
    _add_load(sub)
    _add_models(sub)
    _add_engines(sub)
    return parser


def _add_serve(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`rollout serve`: its flags in five groups, in the order its help lists them."""
    s = sub.add_parser(
        "serve",
        help="serve the Responses API (HTTP, SSE and WebSocket on one port) with a simulated model",
        description="Serve the Responses API on one port: HTTP requests and SSE streams at "
        "http://HOST:PORT/v1/responses, WebSocket mode at ws://HOST:PORT/v1/responses. Point "
        "any Responses client at http://HOST:PORT/v1.",
        formatter_class=DefaultsOnceHelpFormatter,
    )
    _serve_model_flags(s)
    add_engine_flags(s)
    _serve_upstream_flags(s)
    _serve_access_and_fault_flags(s)
    _serve_process_flags(s)


def _serve_model_flags(s: argparse.ArgumentParser) -> None:
    """Where serve listens, the simulated model it plays, where responses are stored and what
    is recorded."""
    s.add_argument("--host", default="127.0.0.1", help="address to listen on")
    s.add_argument("--port", type=int, default=8000, help="port to listen on (0: any free port)")
    s.add_argument(
        "--profile",
        default="instant",
        help=f"inference speed profile: {', '.join(INFERENCE_PROFILES)}; each response gets "
        "this speed to itself, however many run at once (--engine instead: one accelerator "
        "they all share)",
    )
    s.add_argument(
        "--costs",
        default="cpu-only",
        help=f"declared service latencies: {', '.join(COST_PROFILES)}, or a .toml file",
    )
    s.add_argument(
        "--tool-calls",
        type=int,
        default=3,
        metavar="N",
        help="function-tool calls the default model makes before answering",
    )
    s.add_argument(
        "--parallel", type=int, default=1, metavar="N", help="function calls per model step"
    )
    s.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the simulated model")
    s.add_argument(
        "--store",
        default="memory",
        metavar="SPEC",
        help="where store: true responses live: memory, sqlite:PATH (a file that survives "
        "restarts), or redis://HOST:PORT/DB (shared by every worker and machine; see "
        "docs/deployment.md)",
    )
    s.add_argument(
        "--script",
        metavar="FILE",
        help="play these model steps (JSON or TOML; see rollout/model/script.py) instead of the "
        "default tool-using model; a recording (a --record directory or one of its .jsonl "
        "files) replays the recorded model: each conversation turn gets its recorded step",
    )
    s.add_argument(
        "--record",
        metavar="DIR",
        help="record every connection's frames in and out to DIR/conn-<N>-<http|ws>.jsonl "
        "(see docs/test-rigs.md); replay with --script DIR",
    )


def _serve_upstream_flags(s: argparse.ArgumentParser) -> None:
    """The real inference engine serve may forward to instead of the simulated model."""
    s.add_argument(
        "--upstream",
        metavar="URL",
        help="do the inference on this OpenAI-compatible engine (e.g. http://127.0.0.1:8080/v1: "
        "vLLM, SGLang, llama.cpp's server, Ollama, LM Studio, the OpenAI API) instead of the "
        "simulated model; see docs/real-inference.md",
    )
    s.add_argument(
        "--upstream-api",
        choices=APIS,
        default="chat",
        help="what the upstream speaks: chat (/chat/completions) or responses (/responses)",
    )
    s.add_argument(
        "--upstream-key-env",
        metavar="VAR",
        help="send the API key in this environment variable to the upstream",
    )
    s.add_argument(
        "--upstream-model",
        action="append",
        default=[],
        metavar="NAME|FROM=TO",
        help="the upstream's model name for every request (NAME), or for requests naming "
        "FROM (repeatable); otherwise the request's model name is sent",
    )
    s.add_argument(
        "--upstream-first-byte-timeout",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="the longest wait from a step's request to its first event (connecting and the "
        "prefill included); when the client has been sent nothing yet, running out is a "
        "retryable 500 (default: 120)",
    )
    s.add_argument(
        "--upstream-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="the longest wait between two chunks of the upstream's stream, after its first "
        "event (default: 60)",
    )


def _serve_access_and_fault_flags(s: argparse.ArgumentParser) -> None:
    """What a create may say, the API keys serve requires and the faults it injects."""
    s.add_argument(
        "--lenient",
        action="store_true",
        help="accept creates the real API refuses: unknown parameters and tool types are "
        "ignored (the tools echoed), and strict function schemas, enumerated values and "
        "max_output_tokens >= 16 are not checked (docs/protocol-choices.md, 'Strict and "
        "lenient'); without it a create is held to the real API's rules",
    )
    s.add_argument(
        "--api-keys",
        metavar="FILE",
        help="require one of these API keys (one per line; '#' starts a comment); without it, "
        "keys are read from $ROLLOUT_API_KEYS (comma-separated) if set, else none are required",
    )
    s.add_argument(
        "--fault-error",
        action="append",
        default=[],
        metavar="CODE=RATE",
        help="inject an error into this share of responses (repeatable), e.g. server_error=0.05",
    )
    s.add_argument(
        "--fault-disconnect-after",
        type=int,
        metavar="N",
        help="drop the connection after N events of each response",
    )
    s.add_argument(
        "--fault-latency", type=float, default=0.0, metavar="SECONDS", help="added latency"
    )
    s.add_argument("--fault-seed", type=int, default=0, metavar="N", help="seed of the fault draws")


def _serve_process_flags(s: argparse.ArgumentParser) -> None:
    """Shutdown, the server-wide limits, the worker processes and the log level."""
    s.add_argument(
        "--shutdown-grace",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="on SIGINT/SIGTERM, how long running responses may take to finish (a second "
        "signal stops at once, exit status 128 + the signal's number)",
    )
    config_flag(
        s,
        "--max-open-connections",
        "max_open_connections",
        "N",
        "TCP connections at once (HTTP and WebSocket); more are refused with 503",
    )
    config_flag(
        s,
        "--max-body-bytes-in-flight",
        "max_body_bytes_in_flight",
        "BYTES",
        "bytes of request bodies held at once, server-wide; a request past it gets 503",
    )
    config_flag(
        s,
        "--ws-idle-timeout",
        "ws_idle_timeout_s",
        "SECONDS",
        "close a WebSocket that sent no frame for this long while nothing ran on it",
    )
    s.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="worker processes behind the one port, each restarted if it dies (more than one "
        "needs --store redis://...: responses, chains and live rollouts are shared there; "
        "not with --engine)",
    )
    s.add_argument("--worker-index", type=int, default=None, help=argparse.SUPPRESS)
    s.add_argument(
        "--log-level",
        type=str.upper,
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        default="INFO",
        metavar="LEVEL",
        help="the server's log: DEBUG, INFO, WARNING or ERROR",
    )


def _add_bench(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`rollout bench`: the engine limits against their targets."""
    b = sub.add_parser(
        "bench",
        help="measure the engine's limits against their targets (about 3 minutes)",
        description="Measure each engine limit in one run, against a baseline measured side by "
        "side where there is one. Prints one line per figure: name value unit target verdict; "
        "the exit status is 1 when a figure misses its target. All of them take about 3 "
        "minutes on 2 cores; each bench's time is in NAME's help.",
        formatter_class=DefaultsOnceHelpFormatter,
    )
    b.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="benches to run (default: all), with roughly how long each takes on 2 cores: "
        "overhead (40 s), events (10 s), concurrency (4 s), memory (7 s), first-token (4 s), "
        "first-token-stages (12 s), ideal (50 s), upstream-client (10 s), aimock (8 s; "
        "skipped at once without Node and aimock), gateway (25 s; rollout beside agentic-api's "
        "Rust gateway in front of one aimock, skipped at once without them: `pip install "
        "'agentic-api==0.9.0'` or set $ROLLOUT_AGENTIC_SERVER)",
    )


def _add_load(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`rollout load`: many concurrent WebSocket append rollouts against one server."""
    ld = sub.add_parser(
        "load",
        help="many concurrent WebSocket append rollouts against one server process",
        description="Open --connections concurrent WebSocket connections (in batches of 50) "
        "against one server process, each running one append-shape rollout of --calls client "
        "tool calls, all bounded by --timeout. Checks every event stream (sequence numbers "
        "contiguous from 0, one terminal event, response.completed, one pause per call) and "
        "prints a summary, then one line per figure: name value unit target verdict (errors, "
        "lost and duplicated events, p50/p99 per-turn overhead measured by the client, and the "
        "server's CPU per append turn once every connection is open, target 0.3 ms). Exit "
        "code 0 only with no errors and no lost or duplicated events. By default the server is "
        "started in its own process (instant profile, max connections raised to fit).",
        formatter_class=DefaultsOnceHelpFormatter,
    )
    ld.add_argument(
        "--connections", type=int, default=1000, metavar="N", help="concurrent connections"
    )
    ld.add_argument(
        "--calls", type=int, default=10, metavar="N", help="client tool calls per rollout"
    )
    ld.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="bound on the whole run; unfinished rollouts count as errors",
    )
    ld.add_argument(
        "--url",
        default=None,
        help="target a running server instead, e.g. ws://127.0.0.1:8000/v1/responses or "
        "http://127.0.0.1:8000/v1 (start it with `rollout serve --tool-calls N` matching "
        "--calls; its max connections is 1000 per worker)",
    )
    ld.add_argument(
        "--api-key", default=None, metavar="KEY", help="API key for the server at --url, if any"
    )
    ld.add_argument(
        "--workers",
        default=None,
        metavar="N,M,...",
        help="a scaling run: the same load against `rollout serve --workers N` for each count, "
        "one after the other, over one Redis (needs the redis extra); prints the figures side "
        "by side",
    )
    ld.add_argument(
        "--redis",
        default=None,
        metavar="URL",
        help="the Redis of a scaling run (default: a redis-server of its own on a free port)",
    )


def _add_models(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`rollout models`: the simulated model's profile table."""
    sub.add_parser(
        "models",
        help="print the model profiles (context window, reasoning, default effort)",
        description="Print the simulated model's profile table: each model name (or prefix), "
        "its context window, whether it reasons and its default reasoning effort, then the "
        "reasoning tokens per effort.",
        formatter_class=DefaultsOnceHelpFormatter,
    )


def _add_engines(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """`rollout engines`: the shared engine's accelerator profiles (`--engine NAME`)."""
    sub.add_parser(
        "engines",
        help="print the engine profiles of `rollout serve --engine` (KV memory, step times)",
        description="Print each accelerator profile `rollout serve --engine NAME` takes: the "
        "model and accelerator, the declared figures, what follows from them (KV bytes per "
        "token, KV blocks and tokens, decode and prefill step times) and where the figures "
        "come from; then the KV policies.",
        formatter_class=DefaultsOnceHelpFormatter,
    )
