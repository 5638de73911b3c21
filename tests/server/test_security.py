"""API keys and isolation by key; request ids; structured access logs that leak nothing."""

from __future__ import annotations

import logging
from pathlib import Path

import orjson
import pytest
from trio_websocket import open_websocket_url

import rollout
from rollout.cli import api_keys
from rollout.client import ClientError, HttpClient
from rollout.store.sqlite import SqliteStore
from support.servers import serving
from support.waits import wait_for

KEYS = frozenset({"key-a", "key-b"})
SECRET_INPUT = "the secret input sk-THISISNOTAREALKEY0123456789"


def engine() -> rollout.Engine:
    return rollout.Engine(policy=rollout.ScriptedPolicy([rollout.text("ok")]))


@pytest.mark.parametrize("store", ["memory", "sqlite"])
async def test_a_response_stored_under_one_key_is_invisible_to_another(
    store: str, tmp_path: Path
) -> None:
    served = engine()
    if store == "sqlite":
        served.store = SqliteStore(tmp_path / "db.sqlite")
    async with serving(served, api_keys=KEYS) as server:
        base = server.http_base_url
        async with HttpClient(base, "key-a") as a, HttpClient(base, "key-b") as b:
            created = await a.json("POST", "/responses", {"model": "m", "input": "hi"})
            rid = created["id"]
            assert (await a.json("GET", f"/responses/{rid}"))["id"] == rid
            for method, path in [
                ("GET", f"/responses/{rid}"),
                ("GET", f"/responses/{rid}/input_items"),
                ("DELETE", f"/responses/{rid}"),
            ]:
                with pytest.raises(ClientError) as info:
                    await b.json(method, path)
                assert info.value.status == 404
            with pytest.raises(ClientError) as info:
                await b.json(
                    "POST", "/responses", {"model": "m", "input": "x", "previous_response_id": rid}
                )
            assert info.value.code == "previous_response_not_found"
            # Still there for its owner, and chainable by it.
            chained = await a.json(
                "POST", "/responses", {"model": "m", "input": "x", "previous_response_id": rid}
            )
            assert chained["previous_response_id"] == rid
        async with HttpClient(base, "wrong") as c:
            with pytest.raises(ClientError) as info:
                await c.json("GET", f"/responses/{rid}")
            assert info.value.status == 401 and info.value.code == "invalid_api_key"
            assert "wrong" not in info.value.error["message"]
    if isinstance(served.store, SqliteStore):  # and the file holds no key
        await served.store.aclose()
        data = b"".join(p.read_bytes() for p in tmp_path.glob("db.sqlite*"))
        assert b"key-a" not in data and b"key-b" not in data


async def test_websocket_chaining_from_the_store_respects_the_key() -> None:
    async with serving(engine(), api_keys=KEYS) as server:
        url = server.ws_url

        async def create(key: str, **extra: object) -> dict[str, object]:
            headers = [("Authorization", f"Bearer {key}")]
            async with open_websocket_url(url, extra_headers=headers) as ws:  # type: ignore[arg-type]
                body = {"type": "response.create", "model": "m", "input": "hi", **extra}
                await ws.send_message(orjson.dumps(body).decode())
                while True:
                    frame: dict[str, object] = orjson.loads(await ws.get_message())
                    if frame["type"] in ("response.completed", "error"):
                        return frame

        first = await create("key-a", store=True)
        rid = first["response"]["id"]  # type: ignore[index]
        other = await create("key-b", previous_response_id=rid)
        assert other["type"] == "error"
        assert other["error"]["code"] == "previous_response_not_found"  # type: ignore[index]
        mine = await create("key-a", previous_response_id=rid)
        assert mine["type"] == "response.completed"


async def test_access_log_has_one_line_per_request_and_no_secrets(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="rollout.access")
    async with serving(engine(), api_keys=KEYS) as server:
        async with HttpClient(server.http_base_url, "key-a") as http:
            await http.json("POST", "/responses", {"model": "m", "input": SECRET_INPUT})
            with pytest.raises(ClientError):
                await http.json("POST", "/responses", {"model": 5, "input": SECRET_INPUT})
        headers = [("Authorization", "Bearer key-a")]
        async with open_websocket_url(
            server.ws_url,
            extra_headers=headers,  # type: ignore[arg-type]
        ) as ws:
            assert ws.handshake_headers  # the server's x-request-id, see below
            rid = dict(ws.handshake_headers).get(b"x-request-id", b"")
            assert rid.startswith(b"req_")
        await wait_for(lambda: server.engine.stats.ws_connections == 0)  # ws_close is logged
    lines = [orjson.loads(r.getMessage()) for r in caplog.records if r.name == "rollout.access"]
    requests = [line for line in lines if line["event"] == "http_request"]
    assert [r["status"] for r in requests[:2]] == [200, 400]
    assert all(r["request_id"].startswith("req_") for r in requests)
    assert {line["event"] for line in lines} >= {"http_request", "ws_open", "ws_close"}
    text = "\n".join(r.getMessage() for r in caplog.records)
    assert "secret input" not in text and "key-a" not in text


def test_api_keys_from_a_file_or_the_environment(tmp_path: Path) -> None:
    path = tmp_path / "keys"
    path.write_text("# team keys\nkey-a\n\nkey-b  # the second\n")
    assert api_keys(str(path), None) == KEYS
    assert api_keys(None, "key-a, key-b") == KEYS
    assert api_keys(None, None) == frozenset()
    path.write_text("# nothing\n")
    with pytest.raises(ValueError):
        api_keys(str(path), None)
    with pytest.raises(OSError):
        api_keys(str(tmp_path / "missing"), None)
