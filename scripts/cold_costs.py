"""What pieces of a create's path cost warm, and with the caches flushed before each call.

    python scripts/cold_costs.py [--repeats 300]

Between a client's turns the server's caches go cold (the client, its other servers and the
kernel run meanwhile), so the first-token figure of `rollout bench` pays for each piece of code
and each object on the path several times its warm cost. This times some of those pieces in
one process both ways: "cold" after touching 16 MB and running unrelated Python, "warm" right
after a first call. Medians of `--repeats` calls each; microseconds; the format is the bench's
(name value unit target verdict).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import time
from collections.abc import Awaitable, Callable

import orjson
import trio
import trio.testing

import rollout
from protocol import codec
from rollout.engine.work import Work
from rollout.model import tokens
from rollout.service import frames

FLUSH = bytearray(16 * 1024 * 1024)


def flush() -> None:
    FLUSH[::64] = bytes(len(FLUSH[::64]))  # the data caches
    sorted(str(i) for i in range(3000))  # the interpreter's own code and objects


async def timed(call: Callable[[], Awaitable[object]], cold: bool) -> float:
    if cold:
        flush()
    else:
        await call()
    start = time.perf_counter()
    await call()
    return time.perf_counter() - start


async def measure(repeats: int) -> None:
    engine = rollout.Engine(policy=rollout.ScriptedPolicy([rollout.text("ok")]))
    message = orjson.dumps({"type": "response.create", "model": "m", "input": "hi"}).decode()
    a, b = socket.socketpair()
    stream = trio.SocketStream(trio.socket.from_stdlib_socket(a))
    payload = b"x" * 3000

    async def emit(event: object) -> None:
        del event

    async with trio.open_nursery() as nursery:
        parked: list[trio.lowlevel.Task] = []

        async def park() -> None:
            parked.append(trio.lowlevel.current_task())
            await trio.lowlevel.wait_task_rescheduled(lambda _: trio.lowlevel.Abort.SUCCEEDED)

        async def nothing() -> None:
            pass

        async def start_task() -> None:
            nursery.start_soon(nothing)

        async def wake_task() -> None:
            nursery.start_soon(park)
            await trio.testing.wait_all_tasks_blocked()
            start = time.perf_counter()
            trio.lowlevel.reschedule(parked.pop())
            wake_task.seconds = time.perf_counter() - start  # type: ignore[attr-defined]

        async def cancel_scope() -> None:
            with trio.CancelScope():
                pass

        async def send_all() -> None:
            await stream.send_all(payload)
            b.recv(65536)

        async def write() -> None:
            os.write(stream.socket.fileno(), payload)
            await trio.lowlevel.cancel_shielded_checkpoint()
            b.recv(65536)

        async def tokenize() -> None:
            tokens.encoded("<|im_start|>user\nhi<|im_end|>\n")

        async def prepare() -> None:
            req = frames.decode_create(codec.loads(message))
            await engine.prepare(req, Work(keep_spans=False), emit)

        pieces: dict[str, Callable[[], Awaitable[object]]] = {
            "trio_task_start": start_task,
            "cancel_scope_enter_exit": cancel_scope,
            "send_all": send_all,
            "os_write_and_checkpoint": write,
            "tiktoken_short_text": tokenize,
            "engine_prepare": prepare,
        }
        for name, call in pieces.items():
            for state in ("warm", "cold"):
                values = [await timed(call, state == "cold") for _ in range(repeats)]
                print(f"cold_costs.{name}.{state} {statistics.median(values) * 1e6:.4g} us - info")
                await trio.sleep(0)
        for state in ("warm", "cold"):  # (timed inside: the wake alone, not the parking)
            values = []
            for _ in range(repeats):
                if state == "cold":
                    flush()
                await wake_task()
                values.append(wake_task.seconds)  # type: ignore[attr-defined]
            median = statistics.median(values) * 1e6
            print(f"cold_costs.parked_task_wake.{state} {median:.4g} us - info")
        nursery.cancel_scope.cancel()
    a.close()
    b.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=300, help="calls timed per piece and state")
    trio.run(measure, parser.parse_args().repeats)


if __name__ == "__main__":
    main()
