# Dropping a background stream at any event and resuming it gives the live events exactly
# (hypothesis picks where); a WebSocket `response.cancel` stops a running chain response; a
# streaming client that goes away stops a plain response (stored `cancelled`); `include` on
# retrieve applies to the stored response.
from __future__ import annotations

import time

import httpx2 as httpx
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai import OpenAI

from rollout.engine.engine import Engine
from rollout.model.profiles import InferenceProfile
from rollout.testing.thread import ServerThread
from support.sdk import sdk_client

PACED = InferenceProfile(name="paced", decode_tps=400)
LONG = "Write a long story about otters in space."


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(drop_at=st.integers(min_value=0, max_value=60))
def test_dropping_at_any_event_and_resuming_gives_the_live_events(drop_at: int) -> None:
    with ServerThread(Engine(inference=PACED)) as server, sdk_client(server) as client:
        seen = []
        stream = client.responses.create(
            model="gpt-4o", input=LONG, background=True, stream=True, max_output_tokens=200
        )
        for event in stream:
            seen.append(event)
            if len(seen) > drop_at:
                break
        stream.close()
        rid = seen[0].response.id
        rest = list(
            client.responses.retrieve(rid, stream=True, starting_after=seen[-1].sequence_number)
        )
        whole = seen + rest
        assert [e.sequence_number for e in whole] == list(range(len(whole)))
        assert whole[-1].type == "response.completed"
        text = "".join(e.delta for e in whole if e.type == "response.output_text.delta")
        assert text == whole[-1].response.output_text
        replayed = list(client.responses.retrieve(rid, stream=True))
        assert [e.model_dump_json() for e in replayed] == [e.model_dump_json() for e in whole]


def test_a_websocket_cancel_stops_a_running_chain_response() -> None:
    slow = InferenceProfile(name="slow", decode_tps=20)
    with ServerThread(Engine(inference=slow)) as server, sdk_client(server) as client:
        with client.responses.connect() as ws:
            ws.response.create(model="gpt-4o", input=LONG, max_output_tokens=500)
            rid = None
            for event in ws:
                if event.type == "response.created":
                    rid = event.response.id
                if event.type == "response.output_text.delta" and rid is not None:
                    ws.send({"type": "response.cancel", "response_id": rid})  # type: ignore[arg-type, typeddict-item]
                    break
            ended = None
            for event in ws:
                if event.type in ("response.completed", "response.incomplete", "error"):
                    ended = event
                    break
        assert ended is not None and ended.type == "response.incomplete", ended
        assert ended.response.status == "cancelled"  # type: ignore[union-attr]
        assert client.responses.retrieve(rid).status == "cancelled"  # type: ignore[arg-type]


def test_a_streaming_client_gone_stops_a_plain_response() -> None:
    slow = InferenceProfile(name="slow", decode_tps=20)
    with ServerThread(Engine(inference=slow)) as server, sdk_client(server) as client:
        stream = client.responses.create(model="gpt-4o", input=LONG, stream=True)
        rid = None
        for event in stream:
            if event.type == "response.created":
                rid = event.response.id
            if event.type == "response.output_text.delta":
                break
        stream.close()
        assert rid is not None
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with httpx.Client(base_url=server.http_base_url) as http:
                got = http.get(f"/responses/{rid}")
            if got.status_code == 200:
                break
            time.sleep(0.05)
        final = client.responses.retrieve(rid)
        assert final.status == "cancelled" and final.incomplete_details is None
        assert final.usage is not None and final.usage.output_tokens < 30  # it stopped early


def test_include_on_retrieve_applies_to_the_stored_response() -> None:
    with ServerThread(Engine()) as server, sdk_client(server) as client:
        created = client.responses.create(
            model="o4-mini", input="think", reasoning={"effort": "low"}
        )
        reasoning = [i for i in created.output if i.type == "reasoning"]
        assert reasoning and reasoning[0].encrypted_content is None
        plain = client.responses.retrieve(created.id)
        assert next(i for i in plain.output if i.type == "reasoning").encrypted_content is None
        sealed = client.responses.retrieve(created.id, include=["reasoning.encrypted_content"])
        blob = next(i for i in sealed.output if i.type == "reasoning").encrypted_content
        assert blob and blob.startswith("gAAA")
        # The blob restores the reasoning: a store-less turn sending it back is accepted.
        item = next(i for i in sealed.output if i.type == "reasoning").model_dump(exclude_none=True)
        follow = client.responses.create(
            model="o4-mini", input=[item, {"role": "user", "content": "go on"}], store=False
        )
        assert follow.status == "completed"


def test_include_values_are_checked(client: OpenAI) -> None:
    created = client.responses.create(model="gpt-4o", input="hi")
    with pytest.raises(openai.BadRequestError) as exc:
        client.responses.retrieve(created.id, include=["nope"])  # type: ignore[list-item]
    assert exc.value.body["param"] == "include[0]"  # type: ignore[index]
