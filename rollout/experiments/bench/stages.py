# `rollout bench first-token-stages`: where the first token's time goes on a warm WebSocket
# connection. Copies of the first-token bench's server answer a create with that server's own
# frames (recorded first, pre-encoded) at successive points of the create's path: right after
# the session decoded it (`decoded`), in the lane before any work (`lane`), after the
# pre-inference work, where the service would run the response (`prepared`), and where the
# sampling loop starts, after `created` and `in_progress` (`loop`). Beside them the server as it
# is (`full`), the replay of its frames with no server work (`replay`) and the trio-websocket
# echo; each in its own process, all read by one trio-websocket client with the first-token
# bench's interleaved turns. Each stage is its median over the echo's round trip, and each step
# the difference from the stage before: what that part of the path costs the first token, with
# the caches as cold as the client's other turns leave them (seven servers, so colder than the
# first-token bench's four). Informational: no targets. The copies patch the session's, the
# service's and the engine's internals, so the bench measures this checkout only.
from __future__ import annotations

from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, cast

import attrs
import orjson
from trio_websocket import open_websocket_url

import rollout
from protocol.request import CreateRequest
from rollout.conversation.work import Work
from rollout.engine import engine as engine_module
from rollout.engine.engine import Prepared
from rollout.engine.loop import EndRollout, Executor, Outcome
from rollout.experiments.bench.figure import Figure, Report
from rollout.experiments.bench.firsttoken import (
    ECHO_SERVER,
    MINIMAL_SERVER,
    TEXT_SERVER,
    interleaved,
    recorded_frames,
)
from rollout.experiments.harness.procs import running, serve_engine
from rollout.service import service, session

STAGES = ("decoded", "lane", "prepared", "loop")
#: Each step's name, by the stage it ends at (it starts at the one before; the first at replay).
STEPS = {
    "decoded": "decode",
    "lane": "to_lane",
    "prepared": "prepare",
    "loop": "start_events",
    "full": "sampling",
}

# A server cut short at stage argv[2], answering with the frames recorded in the file argv[1].
CUT_SERVER = """
import sys
from rollout.experiments.bench.stages import serve_cut
serve_cut(sys.argv[1], sys.argv[2])
"""


def serve_cut(recorded: str, stage: str) -> None:
    """A child server's main: the first-token bench's server, whose creates stop at `stage`
    (one of STAGES) and answer with the frames of the JSON list in the file `recorded`: those up
    to the first delta, a flush, then the rest."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; choose from {', '.join(STAGES)}")
    frames = [f.encode() for f in orjson.loads(Path(recorded).read_bytes())]
    first = next(i for i, f in enumerate(frames) if b'"response.output_text.delta"' in f[:60]) + 1

    async def answer(ws: Any, start: int = 0) -> None:
        await ws.send_messages(frames[start:first])
        await ws.flush()
        await ws.send_messages(frames[first:])

    if stage == "decoded":
        row = session.EVENTS["response.create"]

        async def create(self: Any, req: CreateRequest, work: Work, size: int) -> None:
            await answer(self.sink_for(None).ws)

        session.EVENTS["response.create"] = attrs.evolve(row, handle=create)
    elif stage == "lane":

        async def respond(
            self: Any, lane: Any, req: CreateRequest, work: Work, pinned: bool
        ) -> None:
            await answer(self.sink_for(lane).ws)

        session.Session._respond = respond  # type: ignore[method-assign]
    elif stage == "prepared":  # the session prepared and registered it; the service runs it

        async def run(self: Any, prepared: Prepared, **_: Any) -> None:
            await answer(cast(Any, prepared.rollout.sink).ws)

        service.Service.run = run  # type: ignore[method-assign]
    else:  # loop

        async def run_loop(r: Any, env: Any, client: Executor) -> Outcome:
            await answer(r.sink.ws, 2)  # created and in_progress were sent
            raise EndRollout("cut")

        engine_module.run_loop = run_loop
    serve_engine(rollout.Engine(policy=rollout.ScriptedPolicy([rollout.text("ok")])))


async def first_token_stages(report: Report, samples: int = 300, warmup: int = 30) -> None:
    async with running(TEXT_SERVER) as server:
        with await recorded_frames(server.port) as recorded:
            async with AsyncExitStack() as stack:
                ports = {"full": server.port}
                for stage in STAGES:
                    cut = running(CUT_SERVER, [recorded.name, stage])
                    ports[stage] = (await stack.enter_async_context(cut)).port
                replay = running(MINIMAL_SERVER, [f"replay:{recorded.name}"])
                ports["replay"] = (await stack.enter_async_context(replay)).port
                echo = await stack.enter_async_context(running(ECHO_SERVER))
                creates = {
                    name: await stack.enter_async_context(
                        open_websocket_url(f"ws://127.0.0.1:{port}/v1/responses")
                    )
                    for name, port in ports.items()
                }
                echo_ws = await stack.enter_async_context(
                    open_websocket_url(f"ws://127.0.0.1:{echo.port}/")
                )
                median = await interleaved(creates, {"echo": echo_ws}, samples, warmup)
    for figure in figures(median):
        report(figure)


def figures(median: dict[str, float]) -> list[Figure]:
    """The bench's lines from the medians (seconds, by stage, with `replay`, `full` and
    `echo`): the echo's round trip, each stage over it, and each step between stages."""
    echo = median["echo"]
    out = [Figure("first_token_stages.echo_round_trip", echo * 1000, "ms")]
    out += [
        Figure(f"first_token_stages.{name}", median[name] / echo, "x")
        for name in ("replay", *STAGES, "full")
    ]
    before = "replay"
    for stage, step in STEPS.items():
        share = (median[stage] - median[before]) / echo
        out.append(Figure(f"first_token_stages.step.{step}", share, "x"))
        before = stage
    return out
