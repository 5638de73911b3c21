# `rollout bench`: the engine's limits, each a figure measured in one run against its target,
# most as a ratio to a baseline measured side by side. One line per figure:
# `name value unit target pass|fail|info`.
from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable

import attrs
import orjson
import trio
from trio_websocket import open_websocket_url

from rollout.client import HttpClient
from rollout.experiments.compare import run_one, turn_overheads
from rollout.experiments.concurrency import first_delta_under_load
from rollout.experiments.figures import Figure, Report
from rollout.experiments.procs import running
from rollout.experiments.streams import events_per_second
from rollout.experiments.upstream_bench import upstream_client
from rollout.experiments.workloads import WORKLOADS, Latency, Workload
from rollout.model.profiles import COST_PROFILES, INFERENCE_PROFILES

CHAIN_MODES = ("http-full", "http-chain", "ws-full", "ws-chain", "ws-append", "http-append")


# -- 1. per-turn server overhead against history length -----------------------------------------


async def overhead_vs_history(
    report: Report, sizes: tuple[int, ...] = (1_000, 10_000, 100_000)
) -> None:
    base = Workload(
        name="bench-history",
        description="history of a given size, then 6 one-token steps",
        tool_calls=(6, 6),
        instructions_bytes=500,
        tool_defs_bytes=1_500,
        first_message="go on",
        tool_output_bytes=(100, 100),
        output_tokens=(1, 1),
        client_latency=Latency(kind="fixed", a=0.0),
    )
    results: dict[tuple[str, int], float] = {}
    for size in sizes:
        scenario = attrs.evolve(base, history_tokens=size).build(0)
        for mode in CHAIN_MODES:
            runs = []
            for repeat in range(3):
                r = await run_one(
                    mode, scenario, INFERENCE_PROFILES["instant"], COST_PROFILES["cpu-only"], repeat
                )
                runs += turn_overheads(r.marks)[1:]  # the first turn carries the history in
            value = statistics.median(runs) if runs else float("nan")
            results[(mode, size)] = value
            report(Figure(f"turn_overhead.{mode}.{size // 1000}k", value * 1000, "ms"))
    for mode in CHAIN_MODES:
        ratio = results[(mode, sizes[-1])] / results[(mode, sizes[0])]
        gated = mode in ("ws-chain", "ws-append")
        report(
            Figure(
                f"turn_overhead_ratio.{mode}.{sizes[-1] // 1000}k_vs_{sizes[0] // 1000}k",
                ratio,
                "x",
                "<=1.2" if gated else "-",
                ratio <= 1.2 if gated else None,
            )
        )


# -- 2. events per second on one connection: rollout.experiments.streams ----------------------


# -- 3. memory of suspended append rollouts ------------------------------------------------------

_MEMORY_SERVER = """
import sys, trio, rollout
from rollout.service.config import ServerConfig
# The model always calls the tool: every rollout stays suspended after its first step.
engine = rollout.Engine(policy=rollout.ScriptedPolicy(lambda ctx: rollout.call("exec", {})))
async def main():
    async with trio.open_nursery() as n:
        port = await n.start(lambda task_status: rollout.serve(
            engine, port=0, config=ServerConfig(append_timeout_s=3600), task_status=task_status))
        print(port, flush=True)
trio.run(main)
"""


async def memory(report: Report, rollouts: int = 1000, context_tokens: int = 8000) -> None:
    async with running(_MEMORY_SERVER) as server:
        base_url = f"http://127.0.0.1:{server.port}/v1"
        baseline = server.rss_mb()
        history = WORKLOADS["long"].build(0).request["input"]
        words = 0
        items = []
        for item in history:
            items.append(item)
            words += len(item["content"].split())
            if words >= context_tokens:
                break
        body = {
            "model": "m",
            "shape": "append",
            "stream": True,
            "input": items,
            "tools": [{"type": "function", "name": "exec", "parameters": {"type": "object"}}],
        }
        paused = 0

        async def worker(k: int) -> None:
            nonlocal paused
            async with HttpClient(base_url) as http:
                for _ in range(k):
                    async for event in http.events("/responses", body):
                        if event.type == "response.done":
                            paused += 1

        per = rollouts // 10
        async with trio.open_nursery() as nursery:
            for _ in range(10):
                nursery.start_soon(worker, per)
        rss = server.rss_mb()
    report(Figure("memory.baseline_rss", baseline, "MB"))
    report(
        Figure("memory.suspended_rollouts", paused, "rollouts", f"={rollouts}", paused == rollouts)
    )
    report(Figure("memory.rss_with_suspended_rollouts", rss, "MB", "<=300", rss <= 300))


# -- 4. time to first token on a warm connection against a raw round trip -------------------------

_TEXT_SERVER = """
import trio, rollout
engine = rollout.Engine(policy=rollout.ScriptedPolicy([rollout.text("ok")]))
async def main():
    async with trio.open_nursery() as n:
        port = await n.start(lambda task_status: rollout.serve(
            engine, port=0, task_status=task_status))
        print(port, flush=True)
trio.run(main)
"""

_ECHO_SERVER = """
import trio
from trio_websocket import serve_websocket
async def echo(request):
    ws = await request.accept()
    while True:
        await ws.send_message(await ws.get_message())
async def main():
    async with trio.open_nursery() as n:
        server = await n.start(serve_websocket, echo, "127.0.0.1", 0, None)
        print(server.port, flush=True)
trio.run(main)
"""


async def first_token(report: Report, samples: int = 200) -> None:
    create = orjson.dumps(
        {"type": "response.create", "model": "m", "input": "hi", "store": False}
    ).decode()
    ours: list[float] = []
    raw: list[float] = []
    async with (
        running(_TEXT_SERVER) as server,
        running(_ECHO_SERVER) as echo,
        open_websocket_url(
            f"ws://127.0.0.1:{server.port}/v1/responses", receive_buffer_size=256 * 1024
        ) as ws,
        open_websocket_url(f"ws://127.0.0.1:{echo.port}/") as ews,
    ):
        payload = "x" * len(create)
        for i in range(samples + 20):  # interleaved; the first 20 warm both up
            start = time.perf_counter()
            await ws.send_message(create)
            first = None
            while True:
                message = str(await ws.get_message())
                if first is None and '"response.output_text.delta"' in message[:60]:
                    first = time.perf_counter() - start
                if '"response.completed"' in message[:60]:
                    break
            start = time.perf_counter()
            await ews.send_message(payload)
            await ews.get_message()
            echo_s = time.perf_counter() - start
            if i >= 20 and first is not None:
                ours.append(first)
                raw.append(echo_s)
    o, r = statistics.median(ours), statistics.median(raw)
    report(Figure("first_token.warm_connection", o * 1000, "ms"))
    report(Figure("first_token.raw_round_trip", r * 1000, "ms"))
    report(Figure("first_token.ratio", o / r, "x", "<=2", o / r <= 2))


# -- 5. the ideal-rollout ratio -------------------------------------------------------------------


async def ideal_ratio(report: Report, repeats: int = 3) -> None:
    scenario = attrs.evolve(WORKLOADS["coding-agent"], tool_calls=(20, 20)).build(0)
    profile = INFERENCE_PROFILES["1000tps"]
    ratios: dict[str, list[float]] = {"ws-append": [], "ws-chain": []}
    for repeat in range(repeats):
        for mode in ratios:
            r = await run_one(mode, scenario, profile, COST_PROFILES["cpu-only"], repeat)
            ratios[mode].append(r.seconds / r.ideal_s)
    append = statistics.median(ratios["ws-append"])
    chain = statistics.median(ratios["ws-chain"])
    report(Figure("ideal_ratio.ws-append.1000tps", append, "x", "<=1.03", append <= 1.03))
    report(Figure("ideal_ratio.ws-chain.1000tps", chain, "x", "-"))
    report(
        Figure(
            "ideal_ratio.ws-chain_vs_ws-append",
            chain / append,
            "x",
            "<=1.05",
            chain / append <= 1.05,
        )
    )


BENCHES: dict[str, Callable[[Report], Awaitable[None]]] = {
    "overhead": overhead_vs_history,
    "events": events_per_second,
    "concurrency": first_delta_under_load,
    "memory": memory,
    "first-token": first_token,
    "ideal": ideal_ratio,
    "upstream-client": upstream_client,
}


async def run(names: list[str], report: Report) -> None:
    for name in names:
        await BENCHES[name](report)
