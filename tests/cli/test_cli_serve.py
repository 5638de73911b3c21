# `rollout serve` as a user runs it: `--port 0` prints the port it bound (not 0), and that port
# serves; the hint printed when plots cannot be drawn survives rich's markup.
from __future__ import annotations

import io
import re
import subprocess
import sys

import httpx2 as httpx
from rich.console import Console

from rollout.experiments.harness.report import NO_PLOTS


def test_port_zero_prints_the_bound_port() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "rollout.cli", "serve", "--port", "0", "--tool-calls", "0"],
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
        port = int(match.group(1))
        assert port != 0
        reply = httpx.post(
            f"http://127.0.0.1:{port}/v1/responses",
            json={"model": "m", "input": "hi"},
            timeout=30,
        )
        assert reply.status_code == 200 and reply.json()["status"] == "completed"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_the_no_plots_hint_keeps_its_brackets() -> None:
    out = io.StringIO()
    Console(file=out, width=200).print(NO_PLOTS)
    assert "pip install 'rollout[plot]'" in out.getvalue()
