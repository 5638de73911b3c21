# A prompt longer than the shared engine's whole KV memory is refused as vLLM refuses one over
# its max_model_len: `context_length_exceeded` (HTTP 400, through the official SDK), even when
# the model's own window is larger; with `truncation: auto` it is cut to fit. A prompt that fits
# but leaves its output no room completes (the step decodes what fits). The server stays up.
from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from rollout.engine.engine import Engine
from rollout.model.accel.shared import SharedEngine
from rollout.model.policy import ScriptedPolicy, text
from rollout.testing.thread import ServerThread
from support.accel import SMALL
from support.sdk import sdk_client

WINDOW = SMALL.kv_tokens  # 3,840 tokens; the model's own window (gpt-4o) is 128K


@pytest.fixture
def server() -> Iterator[ServerThread]:
    engine = Engine(
        policy=ScriptedPolicy([text("A long answer " * 40)]),
        accelerator=SharedEngine(SMALL),
    )
    with ServerThread(engine) as server:
        yield server


def words(n: int) -> str:
    return " ".join(f"w{i % 50}" for i in range(n))


def test_a_prompt_over_the_engines_memory_is_context_length_exceeded(
    server: ServerThread,
) -> None:
    client = sdk_client(server)
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="gpt-4o", input=words(3 * WINDOW))
    error = caught.value.body
    assert isinstance(error, dict) and error["code"] == "context_length_exceeded"
    assert f"the window is {WINDOW}" in error["message"]
    # The server goes on: a short request completes.
    assert client.responses.create(model="gpt-4o", input="hi").status == "completed"


def test_truncation_auto_cuts_it_to_the_engines_memory(server: ServerThread) -> None:
    client = sdk_client(server)
    items = [{"role": "user", "content": words(400)} for _ in range(30)]
    response = client.responses.create(
        model="gpt-4o",
        input=items,  # type: ignore[arg-type]
        truncation="auto",
    )
    assert response.status == "completed"
    assert response.usage is not None and response.usage.input_tokens <= WINDOW


def test_a_prompt_that_leaves_no_room_for_its_output_completes(server: ServerThread) -> None:
    client = sdk_client(server)
    prompt = words(WINDOW // 4)
    used = client.responses.create(model="gpt-4o", input=prompt).usage
    assert used is not None and used.input_tokens < WINDOW
    pad = WINDOW - used.input_tokens - 40  # (two tokens a word; a margin for the joins)
    response = client.responses.create(model="gpt-4o", input=prompt + " " + words(pad // 2))
    assert response.usage is not None
    assert WINDOW - 80 < response.usage.input_tokens <= WINDOW  # (no room for ~120 output)
    assert response.status == "completed" and response.output_text
