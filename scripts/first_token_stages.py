"""Where a warm WebSocket connection's first token goes: the server cut short at each stage.

    python scripts/first_token_stages.py [--turns 300]

Runs this checkout's server answering "ok" as it is, and copies of it that answer a create
with that server's own frames (recorded first), pre-encoded, at successive stages of the
create's path: right after the session has decoded it (`decoded`); in the lane, before any
work (`lane`); after the pre-inference work (`prepared`); and where the sampling loop starts,
after `created` and `in_progress` (`loop`). Also a server replaying the frames with no work at
all (`replay`) and a trio-websocket echo. Each in its own process, all read by one
trio-websocket client, turns interleaved (the first 30 warm up); prints each median over the
echo's. The differences between successive stages are what each stage costs the first token,
with the caches as cold as the client's other turns leave them. Uses the session's internals
(this checkout's only).
"""

from __future__ import annotations

import argparse
import statistics
import time

import orjson
import trio
from trio_websocket import connect_websocket_url

from rollout.experiments.bench.firsttoken import (
    ECHO_SERVER,
    MINIMAL_SERVER,
    TEXT_SERVER,
    first_delta,
    recorded_frames,
)
from rollout.experiments.harness.procs import running

CUT = """
import sys, orjson
import rollout
from rollout.engine import engine as engine_module
from rollout.service import session
from rollout.experiments.harness.procs import serve_engine

frames = [f.encode() for f in orjson.loads(open(sys.argv[1], "rb").read())]
first = next(i for i, f in enumerate(frames) if b'"response.output_text.delta"' in f[:60]) + 1


async def answer(ws, start=0):
    await ws.send_messages(frames[start:first])
    await ws.flush()
    await ws.send_messages(frames[first:])


stage = sys.argv[2]
if stage == "decoded":
    decode, _ = session.EVENTS["response.create"]

    async def create(self, req, work, size):
        await answer(self.sink_for(None).ws)

    session.EVENTS["response.create"] = (decode, create)
elif stage in ("lane", "prepared"):

    async def respond(self, lane, req, work, pinned):
        if stage == "prepared":
            base = await self._base(lane, req, work)
            route = self.routes.get((req.model, req.prompt_cache_key))
            sink = self.sink_for(lane)
            await self.service.prepare(
                req, work, sink, owner=self.owner, context=base, route=route
            )
        await answer(self.sink_for(lane).ws)

    session.Session._respond = respond
elif stage == "loop":

    async def run_loop(r, env, client):
        await answer(r.sink.ws, 2)  # created and in_progress were sent
        raise engine_module.EndRollout("cut")

    engine_module.run_loop = run_loop
engine = rollout.Engine(policy=rollout.ScriptedPolicy([rollout.text("ok")]))
serve_engine(engine)
"""

CREATE = orjson.dumps(
    {"type": "response.create", "model": "m", "input": "hi", "store": False}
).decode()
STAGES = ("decoded", "lane", "prepared", "loop")
WARMUP = 30


async def measure(turns: int) -> None:
    async with running(TEXT_SERVER) as server:
        with await recorded_frames(server.port) as recorded:
            async with (
                running(ECHO_SERVER) as echo,
                running(MINIMAL_SERVER, [f"replay:{recorded.name}"]) as replay,
                running(CUT, [recorded.name, "decoded"]) as decoded,
                running(CUT, [recorded.name, "lane"]) as lane,
                running(CUT, [recorded.name, "prepared"]) as prepared,
                running(CUT, [recorded.name, "loop"]) as loop,
                trio.open_nursery() as nursery,
            ):
                path = "/v1/responses"
                urls = {
                    "full": f"ws://127.0.0.1:{server.port}{path}",
                    **{
                        name: f"ws://127.0.0.1:{cut.port}{path}"
                        for name, cut in zip(STAGES, (decoded, lane, prepared, loop), strict=True)
                    },
                    "replay": f"ws://127.0.0.1:{replay.port}/",
                }
                clients = {k: await connect_websocket_url(nursery, url) for k, url in urls.items()}
                echo_ws = await connect_websocket_url(nursery, f"ws://127.0.0.1:{echo.port}/")
                times: dict[str, list[float]] = {k: [] for k in [*urls, "echo"]}
                for turn in range(turns + WARMUP):
                    got = {k: await first_delta(ws, CREATE) for k, ws in clients.items()}
                    start = time.perf_counter()
                    await echo_ws.send_message("x" * len(CREATE))
                    await echo_ws.get_message()
                    got["echo"] = time.perf_counter() - start
                    if turn >= WARMUP:
                        for k, v in got.items():
                            if v is not None:  # (a response without a text delta: none here)
                                times[k].append(v)
                nursery.cancel_scope.cancel()
    echo_s = statistics.median(times["echo"])
    for name in ("replay", *STAGES, "full", "echo"):
        median = statistics.median(times[name])
        print(f"first_token_stage.{name} {median * 1000:.4g} ms {median / echo_s:.3f} x echo")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=300, help="rounds timed (after 30 warm-up)")
    trio.run(measure, parser.parse_args().turns)


if __name__ == "__main__":
    main()
