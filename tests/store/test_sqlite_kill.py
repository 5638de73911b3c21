# `rollout serve --store sqlite:PATH` as a real process, killed with SIGKILL in the middle of a
# streamed response and started again on the same file: every response that reached
# `response.completed` is still retrievable and chainable with the official SDK, and the one
# cut by the kill is not there. Also: a bad `--store` spec exits 2 with a message.
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from openai import OpenAI

from support.processes import ROOT, cli, project_env, serve_process
from support.tools import EXEC_TOOL


@contextlib.contextmanager
def server(db: Path, log: Path) -> Iterator[tuple[subprocess.Popen[str], int]]:
    """A `rollout serve` process on the store `db`, ready for requests; killed on exit."""
    args = ["--store", f"sqlite:{db}", "--profile", "65tps", "--log-level", "WARNING"]
    with serve_process(*args, log=log) as served:
        yield served.proc, served.port


def client(port: int) -> OpenAI:
    return OpenAI(api_key="t", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0, timeout=30.0)


def tool_output(response: Any, output: str) -> list[dict[str, Any]]:
    calls = [i for i in response.output if i.type == "function_call"]
    assert len(calls) == 1, response.output
    return [{"type": "function_call_output", "call_id": calls[0].call_id, "output": output}]


def test_completed_responses_survive_kill_9_and_chain(tmp_path: Path) -> None:
    db = tmp_path / "data" / "db.sqlite"  # the parent directory is made by --store
    log = tmp_path / "server.log"
    common: dict[str, Any] = {"model": "gpt-test", "tools": [EXEC_TOOL], "store": True}

    with server(db, log) as (proc, port):
        sdk = client(port)
        first = sdk.responses.create(**common, input="List the files, then read the README.")
        second = sdk.responses.create(
            **common, previous_response_id=first.id, input=tool_output(first, "README.md")
        )
        third = sdk.responses.create(
            **common, previous_response_id=second.id, input=tool_output(second, "# rollout")
        )
        completed = [first, second, third]
        assert [r.status for r in completed] == ["completed"] * 3

        # The fourth turn is the model's answer (65 tokens/s): kill the server as it streams.
        killed_id = None
        deltas = 0
        with sdk.responses.create(
            **common,
            previous_response_id=third.id,
            input=tool_output(third, "ok"),
            stream=True,
        ) as stream:
            for event in stream:
                if event.type == "response.created":
                    killed_id = event.response.id
                elif event.type == "response.output_text.delta":
                    deltas += 1
                    if deltas == 3:
                        os.kill(proc.pid, signal.SIGKILL)
                        break
                assert event.type != "response.completed", "the kill came too late"
        assert killed_id is not None and deltas == 3
        proc.wait(timeout=10)
        assert proc.returncode == -signal.SIGKILL

    assert db.exists()
    with server(db, log) as (_, port):
        sdk = client(port)
        for before in completed:
            after = sdk.responses.retrieve(before.id)
            assert after.status == "completed"
            assert after.previous_response_id == before.previous_response_id
            assert after.model_dump()["output"] == before.model_dump()["output"]
            assert after.usage == before.usage
        items = sdk.responses.input_items.list(second.id)
        assert [i.type for i in items.data] == ["function_call_output"]

        with pytest.raises(openai.NotFoundError):
            sdk.responses.retrieve(killed_id)

        fifth = sdk.responses.create(
            **common, previous_response_id=third.id, input=tool_output(third, "ok")
        )
        assert fifth.status == "completed"
        assert fifth.output_text
        assert sdk.responses.retrieve(fifth.id).previous_response_id == third.id


def test_bad_store_spec_exits_2() -> None:
    done = subprocess.run(
        cli("serve", "--port", "0", "--store", "postgres://x"),
        env=project_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert "--store" in done.stderr and "sqlite:PATH" in done.stderr
    assert "Traceback" not in done.stderr
