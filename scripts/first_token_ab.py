"""Time to first token on a warm WebSocket connection, for checkouts side by side.

    python scripts/first_token_ab.py CHECKOUT [CHECKOUT ...] [--turns 600]

Each checkout's server runs in its own process (its own `rollout` package, found through
PYTHONPATH) answering "ok"; one trio-websocket client sends each a `response.create` in turn,
then a same-size message to a trio-websocket echo (in its own process), for `--turns` rounds
(the first 30 warm up). Prints, per checkout, the median time from the create to its first
`response.output_text.delta` and that over the echo's median round trip: the figure
`rollout bench first-token` prints as `first_token.ratio`, here for several checkouts measured
in one run. Only the public API of each checkout is used (`rollout.Engine`, `ScriptedPolicy`,
`text`, `serve`, and the collector settings of `rollout serve` where it has them), so an old
commit measures the same way.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import orjson
import trio
from trio_websocket import WebSocketConnection, connect_websocket_url

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from rollout.experiments.bench.firsttoken import ECHO_SERVER  # (this checkout's echo)

SERVER = """
import trio, rollout
try:  # the collector settings of `rollout serve`, where the checkout has them
    from rollout.server.listen import tune_gc
    tune_gc()
except ImportError:
    pass
engine = rollout.Engine(policy=rollout.ScriptedPolicy(lambda ctx: rollout.text("ok")))
async def main():
    async with trio.open_nursery() as n:
        port = await n.start(lambda task_status: rollout.serve(
            engine, port=0, task_status=task_status))
        print(port, flush=True)
trio.run(main)
"""

CREATE = orjson.dumps(
    {"type": "response.create", "model": "m", "input": "hi", "store": False}
).decode()
WARMUP = 30


def start(code: str, root: str | None) -> tuple[subprocess.Popen[bytes], int]:
    env = dict(os.environ)
    if root is not None:
        env["PYTHONPATH"] = os.path.abspath(root)
    proc = subprocess.Popen(
        [sys.executable, "-P", "-c", code], stdout=subprocess.PIPE, env=env, cwd="/"
    )
    assert proc.stdout is not None
    return proc, int(proc.stdout.readline())


async def first_delta(ws: WebSocketConnection) -> float:
    start_at = time.perf_counter()
    await ws.send_message(CREATE)
    first = 0.0
    while True:
        message = str(await ws.get_message())
        if not first and '"response.output_text.delta"' in message[:60]:
            first = time.perf_counter() - start_at
        if '"response.completed"' in message[:60]:
            return first


async def measure(roots: list[str], turns: int) -> None:
    servers = [start(SERVER, root) for root in roots]
    echo, echo_port = start(ECHO_SERVER, None)
    try:
        async with trio.open_nursery() as nursery:
            clients = [
                await connect_websocket_url(nursery, f"ws://127.0.0.1:{port}/v1/responses")
                for _, port in servers
            ]
            echo_ws = await connect_websocket_url(nursery, f"ws://127.0.0.1:{echo_port}/")
            times: list[list[float]] = [[] for _ in roots]
            echoes: list[float] = []
            for turn in range(turns + WARMUP):
                for i, ws in enumerate(clients):
                    t = await first_delta(ws)
                    if turn >= WARMUP:
                        times[i].append(t)
                start_at = time.perf_counter()
                await echo_ws.send_message("x" * len(CREATE))
                await echo_ws.get_message()
                if turn >= WARMUP:
                    echoes.append(time.perf_counter() - start_at)
            nursery.cancel_scope.cancel()
    finally:
        for proc, _ in [*servers, (echo, 0)]:
            proc.kill()
    echo_s = statistics.median(echoes)
    print(f"first_token.echo_round_trip {echo_s * 1000:.4g} ms - info")
    for root, values in zip(roots, times, strict=True):
        median = statistics.median(values)
        name = os.path.basename(os.path.abspath(root))
        print(f"first_token.{name} {median * 1000:.4g} ms - info")
        ok = "pass" if median / echo_s <= 2 else "fail"
        print(f"first_token.{name}.ratio {median / echo_s:.4g} x <=2 {ok}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkouts", nargs="+", help="checkouts (each with its rollout package)")
    parser.add_argument("--turns", type=int, default=600, help="rounds timed (after 30 warm-up)")
    args = parser.parse_args()
    trio.run(measure, args.checkouts, args.turns)


if __name__ == "__main__":
    main()
