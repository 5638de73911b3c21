# `rollout serve --upstream URL` as a user runs it: against aimock, with the upstream's key taken
# from an environment variable and the model name mapped; and the settings it refuses (exit 2,
# a message, no traceback).
from __future__ import annotations

import os
import re
import subprocess
import sys
from typing import Any

import pytest
from _aimock import Aimock
from openai import OpenAI

from rollout import cli
from rollout.upstream.target import UpstreamError, parse_models


def test_serve_with_an_upstream(aimock: Aimock) -> None:
    del aimock  # started for its skip or failure: this test needs its own, keyed
    keyed = Aimock(env={"AIMOCK_API_KEYS": "sk-upstream-secret"})  # 401 without the key
    try:
        serve_keyed(keyed)
    finally:
        keyed.stop()


def serve_keyed(aimock: Aimock) -> None:
    env = {**os.environ, "ENGINE_KEY": "sk-upstream-secret"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rollout.cli",
            "serve",
            "--port",
            "0",
            "--upstream",
            f"{aimock.url}/v1",
            "--upstream-key-env",
            "ENGINE_KEY",
            "--upstream-model",
            "gpt-test=engine-model",
        ],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stderr is not None
        lines: list[str] = []
        match = None
        while match is None and len(lines) < 20:
            lines.append(proc.stderr.readline())
            match = re.search(
                r"^rollout: serving http://127\.0\.0\.1:(\d+)/v1 \(upstream", lines[-1]
            )
        assert match, lines
        client = OpenAI(base_url=f"http://127.0.0.1:{match.group(1)}/v1", api_key="x")
        exec_tool: Any = {"type": "function", "name": "exec", "parameters": {"type": "object"}}
        response = client.responses.create(
            model="gpt-test", input="run the tests from the cli", tools=[exec_tool]
        )
        assert response.output[0].type == "function_call"
        assert response.model == "gpt-test"  # the client's name; the upstream got its own
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    (sent,) = aimock.requests_for("run the tests from the cli")
    assert sent["body"]["model"] == "engine-model"
    assert sent["response"]["status"] == 200  # the key was sent


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--upstream", "ftp://engine"], "is not an http(s) URL"),
        (["--upstream", "http://127.0.0.1:1/v1", "--upstream-key-env", "UNSET_KEY_VAR"], "not set"),
        (["--upstream", "http://127.0.0.1:1/v1", "--script", "x.json"], "choose one"),
        (["--upstream", "http://127.0.0.1:1/v1", "--upstream-model", "a="], "FROM=TO"),
        (["--upstream", "http://127.0.0.1:1/v1", "--upstream-timeout", "0"], "positive"),
    ],
)
def test_settings_that_cannot_work(
    argv: list[str], message: str, capsys: Any, monkeypatch: Any
) -> None:
    monkeypatch.delenv("UNSET_KEY_VAR", raising=False)
    assert cli.main(["serve", "--port", "0", *argv]) == 2
    assert message in capsys.readouterr().err


def test_model_names() -> None:
    assert parse_models(["engine"]) == ("engine", {})
    assert parse_models(["a=b", "c=d"]) == (None, {"a": "b", "c": "d"})
    with pytest.raises(UpstreamError):
        parse_models([" "])
