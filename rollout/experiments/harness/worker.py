# The worker processes of `rollout compare --jobs N`: each runs rollouts one at a time, as the
# parent hands them out, so that N run at once, each with a process (and so a core) of its own
# and none sharing the parent's progress output. A worker reads JSON lines on stdin (the setup,
# then one job a line: mode, profile name, repeat), warms up (one short unmeasured rollout per
# mode), says it is ready, and answers each job with its RunResult as one JSON line on stdout.
# `Workers` is the parent's side.
from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import IO, Any

import attrs
import cattrs
import orjson
import trio

from rollout.experiments.harness.procs import ChildError, child_command
from rollout.experiments.harness.run import run_one
from rollout.experiments.results import RunResult
from rollout.experiments.workloads.catalog import Latency, Scenario, Workload
from rollout.model.profiles import INFERENCE_PROFILES, CostProfile, InferenceProfile

_converter = cattrs.Converter()

#: The warm-up's rollouts: the run's workload cut to this many tool calls, its client tools
#: instant, at the `instant` profile, so that the first measured run pays no import, encoding
#: load or first-use cost the later ones do not.
WARM_UP_CALLS = 2


def setup_of(
    scenario: Scenario,
    profiles: Sequence[InferenceProfile],
    costs: CostProfile,
    modes: Sequence[str],
) -> dict[str, Any]:
    """What a worker needs to rebuild the experiment's scenario and profiles."""
    return {
        "workload": attrs.asdict(scenario.workload),
        "seed": scenario.seed,
        "profiles": [attrs.asdict(p) for p in profiles],
        "costs": attrs.asdict(costs),
        "modes": list(modes),
    }


def warm_up_scenario(scenario: Scenario) -> Scenario:
    w = attrs.evolve(
        scenario.workload, tool_calls=(WARM_UP_CALLS, WARM_UP_CALLS), client_latency=Latency()
    )
    return w.build(scenario.seed)


async def warm_up(scenario: Scenario, costs: CostProfile, modes: Sequence[str]) -> None:
    """One short unmeasured rollout per mode (see WARM_UP_CALLS)."""
    short = warm_up_scenario(scenario)
    for mode in modes:
        await run_one(mode, short, INFERENCE_PROFILES["instant"], costs, -1)


def main() -> None:
    """A worker's main: the setup line, the warm-up, `ready`, then a result line per job."""
    setup = orjson.loads(sys.stdin.buffer.readline())
    workload = _converter.structure(setup["workload"], Workload)
    scenario = workload.build(setup["seed"])
    profiles = {p["name"]: _converter.structure(p, InferenceProfile) for p in setup["profiles"]}
    costs = _converter.structure(setup["costs"], CostProfile)
    trio.run(warm_up, scenario, costs, setup["modes"])
    out = sys.stdout.buffer
    out.write(b'{"ready":true}\n')
    out.flush()
    for line in sys.stdin.buffer:
        job = orjson.loads(line)
        result = trio.run(
            run_one, job["mode"], scenario, profiles[job["profile"]], costs, job["repeat"]
        )
        out.write(orjson.dumps(result.to_json(full=True)) + b"\n")
        out.flush()


CODE = "from rollout.experiments.harness.worker import main; main()"


class Worker:
    """The parent's handle on one worker process."""

    def __init__(self, process: trio.Process, log: IO[bytes]) -> None:
        self.process = process
        self.log = log
        self._buffer = bytearray()

    async def line(self) -> dict[str, Any]:
        """The worker's next JSON line; ChildError with its stderr if it ended instead."""
        stdout = self.process.stdout
        assert stdout is not None
        while b"\n" not in self._buffer:
            chunk = await stdout.receive_some(1 << 20)
            if not chunk:
                self.log.seek(0)
                tail = self.log.read().decode(errors="replace")[-3000:]
                raise ChildError(f"a compare worker ended early:\n{tail}")
            self._buffer += chunk
        end = self._buffer.index(b"\n")
        data = bytes(self._buffer[:end])
        del self._buffer[: end + 1]
        parsed: dict[str, Any] = orjson.loads(data)
        return parsed

    async def send(self, data: dict[str, Any]) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        await stdin.send_all(orjson.dumps(data) + b"\n")

    async def run(self, mode: str, profile: str, repeat: int) -> RunResult:
        await self.send({"mode": mode, "profile": profile, "repeat": repeat})
        return RunResult.from_json(await self.line())


@asynccontextmanager
async def workers(count: int, setup: dict[str, Any]) -> AsyncIterator[list[Worker]]:
    """`count` workers, each set up and warmed up (ready), ended on exit."""
    command, env = child_command(CODE)
    started: list[Worker] = []
    try:
        for _ in range(count):
            log = tempfile.TemporaryFile()  # noqa: SIM115 (closed below)
            process = await trio.lowlevel.open_process(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, env=env
            )
            worker = Worker(process, log)
            started.append(worker)
            await worker.send(setup)
        for worker in started:
            ready = await worker.line()
            if not ready.get("ready"):
                raise ChildError(f"a compare worker said {ready!r} instead of ready")
        yield started
    finally:
        with trio.CancelScope(shield=True):
            for worker in started:
                if worker.process.stdin is not None:
                    await worker.process.stdin.aclose()
                with trio.move_on_after(10):
                    await worker.process.wait()
                if worker.process.returncode is None:
                    worker.process.kill()
                    await worker.process.wait()
                worker.log.close()
