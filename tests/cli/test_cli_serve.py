# `rollout serve` as a user runs it: `--port 0` prints the port it bound (not 0), and that port
# serves, strict by default and lenient with `--lenient`; with `--engine` it prints the engine's
# profile and policy and its responses run on that engine (its counters in /metrics); the hint
# printed when plots cannot be drawn survives rich's markup.
from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx2 as httpx
from rich.console import Console

from rollout.experiments.harness.report import NO_PLOTS


@contextlib.contextmanager
def serving(*flags: str) -> Iterator[int]:
    """`rollout serve --port 0 --tool-calls 0 FLAGS` in a subprocess; the port it printed."""
    with launched(*flags) as (port, _, _):
        yield port


@contextlib.contextmanager
def launched(*flags: str) -> Iterator[tuple[int, subprocess.Popen[str], str]]:
    """`serving`, with the process (what it prints after the serving line is on its stderr)
    and that line."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "rollout.cli", "serve", "--port", "0", "--tool-calls", "0", *flags],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        lines = []
        match = None
        while match is None and len(lines) < 20:  # the log lines come first
            lines.append(proc.stderr.readline())
            match = re.search(r"^rollout: serving http://127\.0\.0\.1:(\d+)/v1", lines[-1])
        assert match, lines
        yield int(match.group(1)), proc, lines[-1]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def create(port: int, **fields: Any) -> httpx.Response:
    return httpx.post(
        f"http://127.0.0.1:{port}/v1/responses",
        json={"model": "m", "input": "hi", **fields},
        timeout=30,
    )


def test_port_zero_prints_the_bound_port() -> None:
    with serving() as port:
        assert port != 0
        reply = create(port)
        assert reply.status_code == 200 and reply.json()["status"] == "completed"
        refused = create(port, bogus=1)  # strict by default
        assert refused.status_code == 400
        assert refused.json()["error"]["code"] == "unknown_parameter"


def test_lenient_accepts_unknown_parameters() -> None:
    with serving("--lenient") as port:
        reply = create(port, bogus=1, tools=[{"type": "teleport"}])
        assert reply.status_code == 200 and reply.json()["tools"] == [{"type": "teleport"}]


def test_serve_on_a_shared_engine() -> None:
    flags = ("--engine", "h100-llama3.1-8b", "--kv-policy", "ttl", "--kv-ttl", "2.5")
    with launched(*flags) as (port, proc, banner):
        assert proc.stderr is not None
        printed = [proc.stderr.readline() for _ in range(4)]
        reply = create(port, input="run the tests")
        metrics = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=30).text
    assert "(engine h100-llama3.1-8b, kv-policy ttl 2.5 s, costs cpu-only, store memory)" in banner
    assert printed[0].startswith("rollout: engine h100-llama3.1-8b: Llama-3.1-8B (BF16) on ")
    assert printed[1].startswith("rollout:   declared: 8.03B params")
    assert printed[2].startswith("rollout:   derived: KV 128 KiB/token, 26789 blocks")
    assert printed[3] == "rollout: kv-policy ttl (program-level FCFS, ttl 2.5 s)\n"
    assert reply.status_code == 200 and reply.json()["status"] == "completed"
    usage = reply.json()["usage"]
    samples = dict(re.findall(r"^(rollout_engine_[a-z_]+) ([0-9.e+-]+)$", metrics, re.M))
    assert float(samples["rollout_engine_admitted_total"]) == 1
    assert float(samples["rollout_engine_decode_tokens_total"]) == usage["output_tokens"]


def test_the_no_plots_hint_keeps_its_brackets() -> None:
    out = io.StringIO()
    Console(file=out, width=200).print(NO_PLOTS)
    assert "pip install 'rollout[plot]'" in out.getvalue()
