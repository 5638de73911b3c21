# Background mode with the official SDK, in every store (memory, SQLite, Redis): the create
# returns at once (`queued`), the response runs on whatever its client does, is polled to its
# end, streamed from any event (the live events exactly: same sequence numbers, same deltas),
# cancelled (idempotent), and refused where the real API refuses it.
from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from openai import OpenAI

from rollout.engine.engine import Engine
from rollout.model.profiles import InferenceProfile
from rollout.store.base import open_store
from rollout.testing.thread import ServerThread
from support.sdk import sdk_client

#: Slow enough that a response is still running when the test looks at it.
PACED = InferenceProfile(name="paced", decode_tps=100)
SLOW = InferenceProfile(name="slow", decode_tps=20)  # seconds for the default answer
LONG = "Write a long story about otters in space."


@pytest.fixture(params=["memory", "sqlite", "redis"])
def store_spec(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "memory":
        return "memory"
    if request.param == "sqlite":
        return f"sqlite:{tmp_path / 'store.sqlite'}"
    return str(request.getfixturevalue("redis_url"))


@contextlib.contextmanager
def running(spec: str, inference: InferenceProfile = PACED) -> Iterator[OpenAI]:
    store = open_store(spec)
    engine = Engine(store=store, inference=inference)
    with ServerThread(engine) as server, sdk_client(server) as client:
        yield client


def until_ended(client: OpenAI, rid: str) -> Any:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        got = client.responses.retrieve(rid)
        if got.status not in ("queued", "in_progress"):
            return got
        time.sleep(0.02)
    pytest.fail(f"{rid} did not end")


def test_create_returns_queued_and_polling_reaches_the_end(store_spec: str) -> None:
    with running(store_spec, SLOW) as client:
        created = client.responses.create(
            model="gpt-4o", input=LONG, background=True, max_output_tokens=300
        )
        assert created.status == "queued" and created.background is True
        assert client.responses.retrieve(created.id).status in ("queued", "in_progress")
        final = until_ended(client, created.id)
        assert final.status == "completed" and final.output_text
        assert final.usage is not None and final.usage.output_tokens > 0


def test_stream_resumes_from_any_event_exactly(store_spec: str) -> None:
    with running(store_spec) as client:
        live = []
        with client.responses.create(
            model="gpt-4o", input=LONG, background=True, stream=True, max_output_tokens=200
        ) as stream:
            for event in stream:
                live.append(event)
        types = [e.type for e in live]
        assert types[:3] == ["response.created", "response.queued", "response.in_progress"]
        assert live[0].response.status == "queued"
        assert [e.sequence_number for e in live] == list(range(len(live)))
        rid = live[0].response.id
        wire = [e.model_dump_json() for e in live]
        for n in (-1, 0, 2, len(live) // 2, len(live) - 2):
            again = list(client.responses.retrieve(rid, stream=True, starting_after=n))
            assert [e.model_dump_json() for e in again] == wire[n + 1 :]
        assert list(client.responses.retrieve(rid, stream=True, starting_after=len(live))) == []


def test_a_dropped_stream_runs_on_and_the_sdk_reassembles_it(store_spec: str) -> None:
    with running(store_spec) as client:
        seen = []
        stream = client.responses.create(
            model="gpt-4o", input=LONG, background=True, stream=True, max_output_tokens=300
        )
        for event in stream:
            seen.append(event)
            if event.type == "response.output_text.delta" and len(seen) > 8:
                break
        stream.close()  # the client goes; the response does not
        rid, cursor = seen[0].response.id, seen[-1].sequence_number
        text = "".join(e.delta for e in seen if e.type == "response.output_text.delta")
        with client.responses.stream(response_id=rid, starting_after=cursor) as resumed:
            for event in resumed:
                if event.type == "response.output_text.delta":
                    text += event.delta
            final = resumed.get_final_response()
        assert final.status == "completed"
        assert text == final.output_text == until_ended(client, rid).output_text


def test_cancel_stops_it_and_twice_is_idempotent(store_spec: str) -> None:
    with running(store_spec, SLOW) as client:
        created = client.responses.create(
            model="gpt-4o", input=LONG, background=True, max_output_tokens=2000
        )
        time.sleep(0.2)
        cancelled = client.responses.cancel(created.id)
        assert cancelled.status == "cancelled"
        assert client.responses.cancel(created.id).status == "cancelled"
        assert client.responses.retrieve(created.id).status == "cancelled"
        events = list(client.responses.retrieve(created.id, stream=True))
        assert events[-1].type == "response.incomplete"
        assert events[-1].response.status == "cancelled"


def test_only_background_responses_can_be_cancelled(store_spec: str) -> None:
    with running(store_spec, InferenceProfile(name="instant")) as client:
        plain = client.responses.create(model="gpt-4o", input="hi")
        with pytest.raises(openai.BadRequestError) as exc:
            client.responses.cancel(plain.id)
        assert exc.value.body["message"] == (  # type: ignore[index]
            "Only responses created with background=true can be cancelled."
        )
        with pytest.raises(openai.NotFoundError):
            client.responses.cancel("resp_unknown")


def test_background_needs_store_and_http(store_spec: str) -> None:
    with running(store_spec, InferenceProfile(name="instant")) as client:
        with pytest.raises(openai.BadRequestError) as exc:
            client.responses.create(model="gpt-4o", input="hi", background=True, store=False)
        assert exc.value.body["param"] == "store"  # type: ignore[index]
        with client.responses.connect() as ws:
            ws.response.create(model="gpt-4o", input="hi", background=True)
            error = next(iter(ws))
        assert error.type == "error"
        assert error.error.param == "background"


def test_a_stored_streaming_response_replays_its_live_events(store_spec: str) -> None:
    """Not only background ones: every stored streaming response keeps its event log."""
    with running(store_spec) as client:
        with client.responses.create(model="gpt-4o", input=LONG, stream=True) as stream:
            live = [e.model_dump_json() for e in stream]
        rid = json.loads(live[0])["response"]["id"]
        again = [e.model_dump_json() for e in client.responses.retrieve(rid, stream=True)]
        assert again == live
