# The `rollout` command line. `rollout serve` runs the server in the foreground.
from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

import trio

from rollout.engine import Engine
from rollout.model import DefaultPolicy
from rollout.profiles import (
    COST_PROFILES,
    INFERENCE_PROFILES,
    ProfileError,
    cost_profile,
    inference_profile,
)
from rollout.server import serve


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rollout",
        description="A Responses API server with a simulated model, for measuring agent-rollout "
        "protocol shapes.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    s = sub.add_parser(
        "serve",
        help="serve the Responses API (HTTP + SSE) with a simulated model",
        description="Serve /v1/responses on one port. Point any Responses client at "
        "http://HOST:PORT/v1.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    s.add_argument("--host", default="127.0.0.1", help="address to listen on")
    s.add_argument("--port", type=int, default=8000, help="port to listen on (0: any free port)")
    s.add_argument(
        "--profile",
        default="instant",
        help=f"inference speed profile: {', '.join(INFERENCE_PROFILES)}",
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
    s.add_argument("--parallel", type=int, default=1, help="function calls per model step")
    s.add_argument("--seed", type=int, default=0, help="seed of the simulated model")
    s.add_argument("--log-level", default="INFO", help="logging level")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "serve":
        return _serve(args)
    return 2


def _serve(args: argparse.Namespace) -> int:
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(name)s %(message)s")
    if args.tool_calls < 0 or args.parallel < 1:
        print("rollout: --tool-calls must be >= 0 and --parallel >= 1", file=sys.stderr)
        return 2
    try:
        engine = Engine(
            policy=DefaultPolicy(
                tool_calls=args.tool_calls, parallel=args.parallel, seed=args.seed
            ),
            inference=inference_profile(args.profile),
            costs=cost_profile(args.costs),
        )
    except ProfileError as exc:
        print(f"rollout: {exc}", file=sys.stderr)
        return 2
    print(
        f"rollout: serving http://{args.host}:{args.port}/v1 "
        f"(profile {engine.inference.name}, costs {engine.costs.name})",
        file=sys.stderr,
    )
    try:
        trio.run(lambda: serve(engine, host=args.host, port=args.port))
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        print(f"rollout: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
