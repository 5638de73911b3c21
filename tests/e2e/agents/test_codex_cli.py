# Codex CLI end to end on the default model: `codex exec "list the files here"` against a
# ServerThread, over WebSocket (prewarm with `generate: false`, then chaining) and over HTTP (the
# full history each turn). Codex runs sandboxed read-only in a temporary directory and talks only
# to the loopback server. It must run at least two real commands, see no tool errors, and end
# with a message naming the files it listed. Skipped when no `codex` binary is found
# ($ROLLOUT_CODEX, or `codex` on PATH; .ci/run installs the pinned npm package `@openai/codex`).
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from rollout import DefaultPolicy, Engine, ServerConfig, ServerThread
from rollout.experiments.sweeps.codex import CODEX_VERSION, exec_command
from rollout.service.capture import Captured
from rollout.service.service import Service

CODEX = os.environ.get("ROLLOUT_CODEX") or shutil.which("codex")

pytestmark = pytest.mark.skipif(CODEX is None, reason="the codex CLI is not installed")


def run_codex(tmp: Path, base_url: str, websockets: bool, prompt: str) -> list[dict[str, Any]]:
    """`codex exec --json` in a fresh workspace; its JSONL events."""
    assert CODEX is not None
    args, env = exec_command(CODEX, tmp, base_url, websockets, prompt)
    done = subprocess.run(
        args, env=env, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def codex_version() -> str:
    assert CODEX is not None
    out = subprocess.run([CODEX, "--version"], capture_output=True, text=True, timeout=60)
    return out.stdout.strip().rsplit(" ", 1)[-1]


@pytest.mark.parametrize("transport", ["ws", "http"])
def test_codex_runs_a_realistic_session_on_the_default_model(
    transport: str, tmp_path: Path
) -> None:
    if codex_version() != CODEX_VERSION:
        pytest.skip(f"codex {codex_version()} is not the pinned {CODEX_VERSION}")
    captured: list[Captured] = []
    service = Service(Engine(policy=DefaultPolicy()), ServerConfig())
    service.taps.captured = captured
    with ServerThread(service=service) as server:
        events = run_codex(tmp_path, server.http_base_url, transport == "ws", "list the files here")
    items = [e["item"] for e in events if e.get("type") == "item.completed"]
    commands = [i for i in items if i["type"] == "command_execution"]
    assert len(commands) >= 2
    assert all(c["exit_code"] == 0 and c["status"] == "completed" for c in commands), commands
    first_words = {shlex.split(c["command"])[-1].split()[0] for c in commands}
    assert first_words <= {"ls", "find", "sed", "rg", "cat", "wc", "git"}
    errors = [i for i in items if i["type"] == "error" and "metadata" not in i["message"]]
    assert not errors and not [e for e in events if e.get("type") in ("error", "turn.failed")]
    final = [i for i in items if i["type"] == "agent_message"][-1]["text"]
    for name in ("README.md", "pyproject.toml", "src/main.py"):
        assert name in final, final

    # What crossed the wire: no tool error came back, and each transport did its own thing.
    creates = [c for c in captured if c.kind in ("POST /v1/responses", "response.create")]
    outputs = [
        i.get("output", "")
        for c in creates
        for i in c.body.get("input", [])
        if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]
    assert outputs and not [o for o in outputs if "failed to parse" in str(o)]
    assert {c.transport for c in creates} == {transport}
    if transport == "ws":
        assert creates[0].body.get("generate") is False  # the prewarm
        assert all(c.body.get("previous_response_id") for c in creates[1:])
    else:
        assert not any(c.body.get("previous_response_id") for c in creates)
        sizes = [len(c.body["input"]) for c in creates]
        assert sizes == sorted(sizes) and sizes[-1] > sizes[0]  # the full history every turn
