# The durable store (rollout.store.sqlite) against the in-memory one: the same retrieve, delete
# and conversation semantics (every test here runs on both), real responses of every item kind
# coming back field for field, a restart (a new SqliteStore on the same file) that keeps every
# response retrievable and chainable, and `open_store` specs.
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest

from protocol import codec
from protocol.items import Item
from protocol.sealing import Sealed, seal
from rollout import CallStep, ErrorStep, ScriptedPolicy, TextStep, call, search, text
from rollout.conversation.calls import Citation, FunctionCallSpec
from rollout.engine.engine import Engine, Prepared
from rollout.engine.loop import DEFAULT_SECRET
from rollout.model.policy import Step
from rollout.store.memory import ChainBroken, MemoryStore, Store, StoredResponse, visible
from rollout.store.sqlite import SCHEMA, VERSION, SqliteStore, open_store
from support.drive import drive
from support.stores import bodies, delete_the_middle, fill, record

# -- the same semantics on both stores ----------------------------------------------------------


async def test_get_returns_what_was_put(store: Store) -> None:
    await fill(store)
    got = await store.get("resp_2")
    assert got == record("resp_2", "resp_1", "q2", "a2")
    assert await store.get("resp_nope") is None


async def test_put_of_the_same_id_replaces(store: Store) -> None:
    await fill(store)
    await store.put(record("resp_2", "resp_1", "q2", "a2 again"))
    got = await store.get("resp_2")
    assert got is not None
    assert bodies(got.response.output) == ["a2 again"]
    assert bodies(await store.conversation("resp_3")) == ["q1", "a1", "q2", "a2 again", "q3", "a3"]


async def test_conversation_walks_the_chain_oldest_first(store: Store) -> None:
    await fill(store)
    assert len(store) == 3
    assert bodies(await store.conversation("resp_3")) == ["q1", "a1", "q2", "a2", "q3", "a3"]
    assert bodies(await store.conversation("resp_2")) == ["q1", "a1", "q2", "a2"]
    assert bodies(await store.conversation("resp_1")) == ["q1", "a1"]


async def test_deleted_ancestor_breaks_the_chain(store: Store) -> None:
    await fill(store)
    await delete_the_middle(store)
    assert bodies(await store.conversation("resp_1")) == ["q1", "a1"]  # the rest is intact
    assert await store.get("resp_3") is not None


async def test_deleted_root_breaks_the_chain_at_the_root(store: Store) -> None:
    await fill(store)
    assert await store.delete("resp_1") is True
    with pytest.raises(ChainBroken) as info:
        await store.conversation("resp_3")
    assert info.value.args == ("resp_1",)


async def test_missing_leaf_breaks_the_chain(store: Store) -> None:
    await fill(store)
    with pytest.raises(ChainBroken) as info:
        await store.conversation("resp_nope")
    assert info.value.args == ("resp_nope",)
    assert await store.delete("resp_nope") is False


# -- real responses through the engine ----------------------------------------------------------

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        "strict": False,
    },
    {"type": "web_search", "search_context_size": "low"},
]

# The first request's input: every input item kind and content part the server stores.
FIRST_INPUT: list[dict[str, Any]] = [
    {"role": "developer", "content": "Be brief."},
    {
        "type": "message",
        "role": "user",
        "content": [
            {"type": "input_text", "text": "Weather in Paris? See the picture and the file."},
            {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "low"},
            {"type": "input_file", "file_id": "file_1", "filename": "notes.txt"},
        ],
    },
    {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "refusal", "refusal": "Not that."}],
    },
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Thinking."}],
        # A blob this server sealed (a foreign one is refused: invalid_encrypted_content).
        "encrypted_content": seal(Sealed(item_id="rs_1", tokens=3, text="Hmm."), DEFAULT_SECRET),
        "content": [{"type": "reasoning_text", "text": "Hmm."}],
    },
    {"role": "user", "content": "Go on."},
]

STEPS: list[Step] = [
    search("weather paris"),  # turn 1: a hosted web search ...
    CallStep(  # ... then commentary and two parallel function calls, which end the response
        calls=(
            FunctionCallSpec(name="get_weather", arguments='{"city": "Paris"}'),
            FunctionCallSpec(name="get_weather", arguments='{"city": "Lyon"}'),
        ),
        text="Checking both.",
    ),
    TextStep(  # turn 2: a cited answer
        text="Sunny. See Source 1.",
        citations=(
            Citation(url="https://example.com/w", title="Source 1", start_index=11, end_index=19),
        ),
    ),
    call("get_weather", {"city": "Nice"}),  # turn 3
    ErrorStep(code="server_error", message="boom"),  # turn 4: a failed response, stored too
]
# The reasoning item of FIRST_INPUT counts as a model turn already taken: ScriptedPolicy(STEPS,
# first_turn=1) plays STEPS from its start.


async def run(engine: Engine, body: dict[str, Any]) -> Prepared:
    return (await drive(engine, body)).prepared


def call_ids(prepared: Prepared) -> list[str]:
    return [i.call_id for i in prepared.rollout.stream.response.output if i.type == "function_call"]


def outputs(prepared: Prepared, *bodies: Any) -> list[dict[str, Any]]:
    ids = call_ids(prepared)
    assert len(ids) == len(bodies)
    return [
        {"type": "function_call_output", "call_id": c, "output": b}
        for c, b in zip(ids, bodies, strict=True)
    ]


async def rollout(engine: Engine) -> list[Prepared]:
    """Four chained turns covering every item kind; the last one fails."""
    common: dict[str, Any] = {
        "model": "m",
        "tools": TOOLS,
        "instructions": "You are terse.",
        "metadata": {"run": "1"},
        "user": "u1",
        "temperature": 0.5,
        "reasoning": {"effort": "low", "summary": None},
    }
    first = await run(engine, {**common, "input": FIRST_INPUT})
    second = await run(
        engine,
        {
            **common,
            "previous_response_id": first.rollout.stream.response.id,
            "input": outputs(
                first, "18C", [{"type": "input_text", "text": "20C"}]
            ),  # text and parts
        },
    )
    third = await run(
        engine,
        {
            **common,
            "previous_response_id": second.rollout.stream.response.id,
            "input": "And Nice?",
        },
    )
    fourth = await run(
        engine,
        {
            **common,
            "previous_response_id": third.rollout.stream.response.id,
            "input": outputs(third, "22C"),
        },
    )
    return [first, second, third, fourth]


def expected_conversation(turns: list[Prepared]) -> list[Item]:
    items: list[Item] = []
    for p in turns:
        items.extend(p.input_items)
        items.extend(p.rollout.stream.response.output)
    return items


async def test_real_responses_round_trip_with_every_item_kind(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "db.sqlite")
    try:
        engine = Engine(policy=ScriptedPolicy(STEPS, first_turn=1), store=store)
        turns = await rollout(engine)
        statuses = [p.rollout.stream.response.status for p in turns]
        assert statuses == ["completed", "completed", "completed", "failed"]
        kinds = {i.type for p in turns for i in [*p.input_items, *p.rollout.stream.response.output]}
        assert kinds == {"message", "function_call", "function_call_output", "web_search_call"} | {
            "reasoning"
        }
        for p in turns:
            live = p.rollout.stream.response
            got = await store.get(live.id)
            assert got is not None
            assert got.response == live
            assert codec.to_json(got.response) == codec.to_json(live)
            assert got.input_items == p.input_items
            assert got.previous_response_id == p.request.previous_response_id
        last = turns[-1].rollout.stream.response.id
        assert await store.conversation(last) == expected_conversation(turns)
        assert len(store) == 4
    finally:
        await store.aclose()


async def test_engine_runs_identically_on_both_stores(tmp_path: Path) -> None:
    sqlite = SqliteStore(tmp_path / "db.sqlite")
    try:
        results = []
        for store in (MemoryStore(), sqlite):
            engine = Engine(policy=ScriptedPolicy(STEPS, first_turn=1), store=store)
            turns = await rollout(engine)
            last = turns[-1].rollout.stream.response.id
            conversation = [codec.to_json(i) for i in await store.conversation(last)]
            for item in conversation:  # ids are fresh per run
                item.pop("id", None)
                item.pop("call_id", None)
            results.append(conversation)
        assert results[0] == results[1]
    finally:
        await sqlite.aclose()


# -- restart --------------------------------------------------------------------------------------


async def test_responses_survive_a_restart_and_chain(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    steps = [call("get_weather", {"city": "Paris"}), text("Sunny."), text("Still sunny.")]
    before = SqliteStore(path)
    engine = Engine(policy=ScriptedPolicy(steps), store=before)
    first = await run(engine, {"model": "m", "tools": TOOLS[:1], "input": "Weather?"})
    second = await run(
        engine,
        {
            "model": "m",
            "tools": TOOLS[:1],
            "previous_response_id": first.rollout.stream.response.id,
            "input": outputs(first, "18C"),
        },
    )
    await before.aclose()
    await before.aclose()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        await before.get(first.rollout.stream.response.id)

    after = SqliteStore(path)
    try:
        for p in (first, second):
            got = await after.get(p.rollout.stream.response.id)
            assert got is not None
            assert got.response == p.rollout.stream.response
            assert got.input_items == p.input_items
        engine = Engine(policy=ScriptedPolicy(steps), store=after)  # a new process, in effect
        third = await run(
            engine,
            {
                "model": "m",
                "tools": TOOLS[:1],
                "previous_response_id": second.rollout.stream.response.id,
                "input": "And tomorrow?",
            },
        )
        response = third.rollout.stream.response
        assert response.status == "completed"
        assert [i.content[0].text for i in response.output] == ["Still sunny."]  # type: ignore[union-attr]
        conversation = await after.conversation(response.id)
        assert conversation == expected_conversation([first, second, third])
    finally:
        await after.aclose()


async def test_the_file_is_in_wal_mode_with_its_tables(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    store = SqliteStore(path)
    await store.put(record("resp_1", None, "q1", "a1"))
    await store.aclose()
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        tables = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        assert tables.fetchall() == [
            ("conversation_items",),
            ("conversations",),
            ("items",),
            ("logs",),  # the item index (store/sqlite_conversations.py)
            ("meta",),
            ("responses",),
            ("sqlite_sequence",),  # (conversation_items' AUTOINCREMENT)
            ("unfinished",),
        ]
        assert conn.execute("PRAGMA user_version").fetchone() == (VERSION,)
        columns = [row[1] for row in conn.execute("PRAGMA table_info(responses)")]
        assert columns == [
            "id",
            "previous_response_id",
            "owner",
            "created_at",
            "response",
            "input_items",
        ]
        assert conn.execute("SELECT id, previous_response_id FROM responses").fetchall() == [
            ("resp_1", None)
        ]
    finally:
        conn.close()


# -- owners: keyed hashes, never API keys ---------------------------------------------------------

KEY = "sk-proj-THISISNOTAREALKEY0123456789abcdef"


def owned(rid: str, owner: str | None) -> StoredResponse:
    stored = record(rid, None, "q", "a")
    stored.owner = owner
    return stored


def file_bytes(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))


async def test_the_file_holds_no_api_key_and_isolation_by_key_holds(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite"
    store = SqliteStore(path)
    await store.put(owned("resp_1", KEY))
    await store.put(owned("resp_2", None))
    got = await store.get("resp_1")
    assert got is not None
    assert visible(got, KEY) is got
    assert visible(got, "sk-another-key") is None and visible(got, None) is None
    anonymous = await store.get("resp_2")
    assert visible(anonymous, None) is anonymous and visible(anonymous, KEY) is None
    await store.put(got)  # written back as read (e.g. by a tool): still the same owner
    assert visible(await store.get("resp_1"), KEY) is not None
    await store.aclose()
    assert KEY.encode() not in file_bytes(path)
    conn = sqlite3.connect(path)
    try:
        [(column,)] = conn.execute("SELECT owner FROM responses WHERE id = 'resp_1'").fetchall()
    finally:
        conn.close()
    assert column != KEY and KEY not in column and len(column) == 64  # HMAC-SHA256, hex
    again = SqliteStore(path)  # the secret is the file's: a restart still finds the owner
    try:
        assert visible(await again.get("resp_1"), KEY) is not None
    finally:
        await again.aclose()


async def test_each_file_has_its_own_secret(tmp_path: Path) -> None:
    a, b = SqliteStore(tmp_path / "a.sqlite"), SqliteStore(tmp_path / "b.sqlite")
    try:
        assert a.owner_hash(KEY) != b.owner_hash(KEY)
        assert a.owner_hash(KEY) == a.owner_hash(KEY)
    finally:
        await a.aclose()
        await b.aclose()


async def test_a_file_with_plain_text_owners_is_migrated(tmp_path: Path) -> None:
    """A file from before owners were hashed (no user_version, API keys in `owner`)."""
    path = tmp_path / "old.sqlite"
    response = record("resp_old", None, "q", "a").response
    conn = sqlite3.connect(path)
    with conn:
        conn.execute(SCHEMA)
        conn.execute(
            "INSERT INTO responses VALUES (?, NULL, ?, 0, ?, '[]')",
            ("resp_old", KEY, orjson.dumps(codec.to_json(response))),
        )
        conn.execute(
            "INSERT INTO responses VALUES (?, NULL, NULL, 0, ?, '[]')",
            ("resp_anon", orjson.dumps(codec.to_json(response))),
        )
    conn.close()
    store = SqliteStore(path)
    try:
        old = await store.get("resp_old")
        assert visible(old, KEY) is old and visible(old, "sk-other") is None
        anon = await store.get("resp_anon")
        assert visible(anon, None) is anon
    finally:
        await store.aclose()
    assert KEY.encode() not in file_bytes(path)
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone() == (VERSION,)
    finally:
        conn.close()


async def test_a_file_from_a_newer_version_is_refused_clearly(tmp_path: Path) -> None:
    path = tmp_path / "new.sqlite"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {VERSION + 1}")
    conn.close()
    with pytest.raises(ValueError, match="made by a newer rollout"):
        open_store(f"sqlite:{path}")


async def test_the_file_is_held_exclusively_and_has_no_shm_file(tmp_path: Path) -> None:
    """The WAL index is in memory (no -shm file to map: a failing disk cannot be SIGBUS), so
    the file is one store's while it is open; closed, it opens again."""
    path = tmp_path / "db.sqlite"
    store = SqliteStore(path)
    try:
        await store.put(record("resp_1", None, "q1", "a1"))
        assert sorted(p.name for p in tmp_path.iterdir()) == ["db.sqlite", "db.sqlite-wal"]
        with pytest.raises(ValueError, match=r"database is locked \(another process has it"):
            open_store(f"sqlite:{path}")
    finally:
        await store.aclose()
    again = SqliteStore(path)
    try:
        assert await again.get("resp_1") is not None
    finally:
        await again.aclose()


# -- open_store -----------------------------------------------------------------------------------


async def test_open_store_specs(tmp_path: Path) -> None:
    assert isinstance(open_store("memory"), MemoryStore)
    nested = tmp_path / "a" / "b" / "db.sqlite"
    store = open_store(f"sqlite:{nested}")
    assert isinstance(store, SqliteStore)
    assert nested.exists()
    await store.aclose()
    for bad in ("", "sqlite", "sqlite:", "postgres://x", "Memory"):
        with pytest.raises(ValueError, match=r"'sqlite:PATH' or 'redis://|needs a file path"):
            open_store(bad)
    with pytest.raises(ValueError, match=r"expected redis://HOST:PORT/DB"):
        open_store("redis:x")
    not_a_db = tmp_path / "not.sqlite"
    not_a_db.write_bytes(b"this is not a database, just some bytes " * 50)
    with pytest.raises(ValueError, match="cannot open store"):
        open_store(f"sqlite:{not_a_db}")
