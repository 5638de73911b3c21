"""What an event log costs a stored streaming response: one long SSE response (a scripted
4,000-word answer, the instant profile, the memory store) streamed with `store: true` (logged)
and `store: false` (not), interleaved, 9 repeats each after a warm-up; prints each one's median
and the ratio of the medians. Run: `python scripts/eventlog_cost.py`."""

from __future__ import annotations

import statistics
import time

import httpx2 as httpx

import rollout
from rollout.engine.engine import Engine
from rollout.testing.thread import ServerThread

REPEATS = 9
WORDS = 4000


def main() -> None:
    policy = rollout.ScriptedPolicy(lambda ctx: rollout.text("word " * WORDS))
    with (
        ServerThread(Engine(policy=policy)) as server,
        httpx.Client(base_url=server.http_base_url, timeout=60) as http,
    ):

        def once(store: bool) -> tuple[float, int]:
            body = {"model": "m", "input": "go", "stream": True, "store": store}
            start, events = time.perf_counter(), 0
            with http.stream("POST", "/responses", json=body) as r:
                for line in r.iter_lines():
                    events += line.startswith("data: ")
            return time.perf_counter() - start, events

        once(True), once(False)  # warm-up
        runs: dict[bool, list[tuple[float, int]]] = {True: [], False: []}
        for _ in range(REPEATS):
            for store in (False, True):
                runs[store].append(once(store))
        medians = {}
        for store in (False, True):
            seconds = [s for s, _ in runs[store]]
            medians[store] = statistics.median(seconds)
            print(
                f"store={store!s:<5} events={runs[store][0][1]} "
                f"median={medians[store] * 1e3:.1f} ms "
                f"min={min(seconds) * 1e3:.1f} max={max(seconds) * 1e3:.1f}"
            )
        print(f"logged/unlogged median ratio: {medians[True] / medians[False]:.2f}")


if __name__ == "__main__":
    main()
