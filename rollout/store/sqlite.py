# The durable response store (`rollout serve --store sqlite:PATH`): one SQLite file in WAL mode,
# one table of responses (orjson of the wire form; conversations and the item index are
# sqlite_conversations.py's tables), one connection used only from worker threads
# (`trio.to_thread`, one call at a time), one transaction per write. It owns that connection and
# the file's schema (versioned; an older file is migrated on open). API keys are not stored: the
# `owner` column holds an HMAC of the key under the file's own secret (docs/reliability.md).
# Encoding and decoding stay on the trio thread. `from_spec` makes one from `--store sqlite:PATH`
# (open_store's row for it, store/base.py).
#
# A failing disk is an error, never a signal. The file is opened with `locking_mode=EXCLUSIVE`
# before WAL mode is set, so SQLite keeps the WAL index in heap memory: no `-shm` file exists and
# nothing is mmapped (`mmap_size=0` too). A mapped page that cannot be written (a full tmpfs, an
# unwritable or failing `-shm`) is SIGBUS, which kills the server with nothing logged; a failed
# write() is an errno that SQLite returns as an error. Exclusive mode means one process holds
# the file while it is open: that is the rule already (a SQLite store is one process's;
# `--workers N` refuses it, rollout.server.workers), and a second `rollout serve` on the same file
# is refused at start (the file is locked) instead of sharing it. Every sqlite3.Error of a call
# becomes a StoreError (store/base.py), logged here in one line: 503 `store_unavailable` for a
# full disk or a locked file (it passes), 500 `server_error` for the rest (read-only, I/O error).
from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import orjson
import trio

from protocol import codec
from protocol.items import Item
from protocol.response import Response
from rollout.store.base import (
    STOPPED,
    UNFINISHED,
    ChainBroken,
    LocalStore,
    Logged,
    Store,
    StoredResponse,
    StoreError,
    decode_log,
    encode_log,
    items_of,
    open_store,
    store_failed,
    store_unavailable,
)
from rollout.store.sqlite_conversations import INDEX, TABLES, SqliteConversations, index_rows

T = TypeVar("T")
log = logging.getLogger("rollout.store.sqlite")

SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    id TEXT PRIMARY KEY,
    previous_response_id TEXT,
    owner TEXT,
    created_at INTEGER,
    response BLOB,
    input_items BLOB
)
"""
META = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value BLOB)"
# The event log of each stored streaming response that has ended (store/base.py encode_log).
LOGS = "CREATE TABLE IF NOT EXISTS logs (id TEXT PRIMARY KEY, events BLOB, complete INTEGER)"
# Responses stored before their end (background ones): a file opened with rows here belongs to
# a server that stopped before they ended; they are settled as failed (`settle_unfinished`).
UNFINISHED_TABLE = "CREATE TABLE IF NOT EXISTS unfinished (id TEXT PRIMARY KEY)"

# PRAGMA user_version of the file: 0 is a file without it (made before owners were hashed, its
# `owner` column holds API keys), 1 hashes owners with the secret in `meta`.
VERSION = 1

# The chain ending at ?, newest first (depth 0), one row per link found. If the deepest row still
# names a previous response, that one is missing: the chain is broken there.
CHAIN = """
WITH RECURSIVE chain(depth, id, previous_response_id, response, input_items) AS (
    SELECT 0, id, previous_response_id, response, input_items FROM responses WHERE id = ?
    UNION ALL
    SELECT chain.depth + 1, r.id, r.previous_response_id, r.response, r.input_items
    FROM responses AS r JOIN chain ON r.id = chain.previous_response_id
)
SELECT previous_response_id, response, input_items FROM chain ORDER BY depth DESC
"""


class SqliteStore(SqliteConversations, LocalStore):
    """The `Store` protocol on one SQLite file (conversations: SqliteConversations). Opened
    (and the schema made) on construction; `close()` when done."""

    def __init__(self, path: str | os.PathLike[str], *, synchronous: str = "NORMAL") -> None:
        self.path = Path(path)
        self._limiter = trio.CapacityLimiter(1)  # one call at a time on the one connection
        conn = sqlite3.connect(self.path, check_same_thread=False)
        try:
            conn.execute("PRAGMA busy_timeout=5000")
            # Before WAL mode: the WAL index in heap memory, no -shm file, no mmap (the header).
            conn.execute("PRAGMA locking_mode=EXCLUSIVE")
            conn.execute("PRAGMA mmap_size=0")
            conn.execute("PRAGMA journal_mode=WAL")
            # NORMAL in WAL mode: a commit appends the transaction to the WAL file with write()
            # and returns; fsync happens at checkpoints. The committed frames are then in the
            # OS page cache, which outlives the process, so a commit survives a crash or
            # `kill -9` of the server; only an OS crash or power loss can lose the latest
            # commits (the file stays consistent). FULL also fsyncs the WAL on every commit.
            conn.execute(f"PRAGMA synchronous={_pragma(synchronous)}")
            self._secret = _prepare(conn, self.path)
            settled = settle_unfinished(conn)
            if settled:
                log.warning(
                    "%s: %d background responses of a stopped server: failed", path, settled
                )
        except BaseException:
            conn.close()
            raise
        self._conn: sqlite3.Connection | None = conn

    def owner_hash(self, key: str) -> str:
        """What the `owner` column holds for `key`: HMAC-SHA256 under this file's secret."""
        return hmac.new(self._secret, key.encode(), hashlib.sha256).hexdigest()

    def __repr__(self) -> str:
        return f"SqliteStore({str(self.path)!r})"

    # -- the worker -----------------------------------------------------------------------------

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """`fn(conn)` in a worker thread, serialized. Not abandoned on cancel: a write that has
        started runs to its commit (or rollback) before the caller sees the cancellation."""

        def work() -> T:
            conn = self._conn
            if conn is None:
                raise RuntimeError(f"{self!r} is closed")
            return fn(conn)

        try:
            return await trio.to_thread.run_sync(work, limiter=self._limiter)
        except sqlite3.Error as exc:
            error = as_store_error(exc)
            log.warning("%s: %s", self.path, error.message)
            raise error from None

    # -- the Store protocol ---------------------------------------------------------------------

    async def put(self, record: StoredResponse) -> None:
        response = record.response
        owner = record.owner
        if owner is not None and record.hashed is None:  # (a record read back is hashed)
            owner = self.owner_hash(owner)
        row = (
            response.id,
            record.previous_response_id,
            owner,
            response.created_at,
            orjson.dumps(codec.to_json(response)),
            orjson.dumps(codec.to_json(record.input_items)),
        )
        index = index_rows([*record.input_items, *response.output], response.id, owner)

        unfinished = response.status in UNFINISHED

        def write(conn: sqlite3.Connection) -> None:
            with conn:  # one transaction: committed on exit, rolled back on an error
                conn.execute(
                    "INSERT OR REPLACE INTO responses (id, previous_response_id, owner, "
                    "created_at, response, input_items) VALUES (?, ?, ?, ?, ?, ?)",
                    row,
                )
                if unfinished:
                    conn.execute("INSERT OR IGNORE INTO unfinished (id) VALUES (?)", (row[0],))
                else:
                    conn.execute("DELETE FROM unfinished WHERE id = ?", (row[0],))
                conn.executemany(INDEX, index)

        await self._run(write)

    async def put_log(self, response_id: str, events: list[Logged], complete: bool) -> None:
        blob = encode_log(events)

        def write(conn: sqlite3.Connection) -> None:
            with conn:
                conn.execute(
                    "INSERT OR REPLACE INTO logs (id, events, complete) VALUES (?, ?, ?)",
                    (response_id, blob, int(complete)),
                )

        await self._run(write)

    async def get_log(self, response_id: str) -> tuple[list[Logged], bool] | None:
        def read(conn: sqlite3.Connection) -> tuple[Any, ...] | None:
            row: tuple[Any, ...] | None = conn.execute(
                "SELECT events, complete FROM logs WHERE id = ?", (response_id,)
            ).fetchone()
            return row

        row = await self._run(read)
        return None if row is None else (decode_log(bytes(row[0])), bool(row[1]))

    async def get(self, response_id: str) -> StoredResponse | None:
        def read(conn: sqlite3.Connection) -> tuple[Any, ...] | None:
            cursor = conn.execute(
                "SELECT previous_response_id, response, input_items, owner FROM responses "
                "WHERE id = ?",
                (response_id,),
            )
            row: tuple[Any, ...] | None = cursor.fetchone()
            return row

        row = await self._run(read)
        if row is None:
            return None
        previous, response, input_items, owner = row
        return StoredResponse(
            owner=owner,
            hashed=self.owner_hash,
            response=codec.structure(orjson.loads(response), Response),
            input_items=items_of(orjson.loads(input_items)),
            previous_response_id=previous,
        )

    async def delete(self, response_id: str) -> bool:
        def remove(conn: sqlite3.Connection) -> bool:
            with conn:
                cursor = conn.execute("DELETE FROM responses WHERE id = ?", (response_id,))
                conn.execute("DELETE FROM logs WHERE id = ?", (response_id,))
                conn.execute("DELETE FROM unfinished WHERE id = ?", (response_id,))
                conn.execute("DELETE FROM items WHERE source = ?", (response_id,))
            return cursor.rowcount > 0

        return await self._run(remove)

    async def conversation(self, response_id: str) -> list[Item]:
        """Every item of the chain ending at `response_id`: inputs and outputs, oldest first.
        One query (a recursive CTE) for the whole chain."""

        def read(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
            return conn.execute(CHAIN, (response_id,)).fetchall()

        rows = await self._run(read)
        if not rows:
            raise ChainBroken(response_id)
        oldest_previous = rows[0][0]
        if oldest_previous is not None:
            raise ChainBroken(oldest_previous)
        items: list[Item] = []
        for _, response, input_items in rows:
            items.extend(items_of(orjson.loads(input_items)))
            items.extend(items_of(orjson.loads(response)["output"]))
        return items

    # -- lifetime -------------------------------------------------------------------------------

    async def close(self) -> None:
        """Close the connection (after any call in flight). Idempotent."""
        async with self._limiter:
            conn, self._conn = self._conn, None
            if conn is not None:
                conn.close()

    aclose = close  # the name trio gives closing an async resource

    def __len__(self) -> int:
        """Rows in the table (a blocking query: for tests and tools, not the server)."""
        if self._conn is None:
            raise RuntimeError(f"{self!r} is closed")
        count: int = self._conn.execute("SELECT count(*) FROM responses").fetchone()[0]
        return count


class StoreVersionError(ValueError):
    """The file was made by a newer rollout, whose schema this one does not know."""


def _prepare(conn: sqlite3.Connection, path: Path) -> bytes:
    """Make or migrate the schema (one transaction, taken before reading the version, so two
    processes opening one old file migrate it once) and return the owner secret."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > VERSION:
            raise StoreVersionError(
                f"{path} has schema version {version}, made by a newer rollout; this one reads "
                f"version {VERSION} (and migrates older files)"
            )
        conn.execute(SCHEMA)
        conn.execute(META)
        for table in TABLES:
            conn.execute(table)
        conn.execute(LOGS)
        conn.execute(UNFINISHED_TABLE)
        if version < 1:  # API keys in plain text, or a new file: hash them under a new secret
            secret = secrets.token_bytes(32)
            conn.execute("INSERT INTO meta (key, value) VALUES ('owner_secret', ?)", (secret,))
            rows = conn.execute("SELECT id, owner FROM responses WHERE owner IS NOT NULL")
            hashed = [
                (hmac.new(secret, owner.encode(), hashlib.sha256).hexdigest(), rid)
                for rid, owner in rows.fetchall()
            ]
            conn.executemany("UPDATE responses SET owner = ? WHERE id = ?", hashed)
            conn.execute(f"PRAGMA user_version = {VERSION}")
            if hashed:
                log.warning("%s: migrated: %d API keys replaced by keyed hashes", path, len(hashed))
        row = conn.execute("SELECT value FROM meta WHERE key = 'owner_secret'").fetchone()
        if row is None or not isinstance(row[0], bytes) or len(row[0]) < 16:
            raise StoreVersionError(f"{path} has no owner secret in its meta table")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return bytes(row[0])


def settle_unfinished(conn: sqlite3.Connection) -> int:
    """End as failed every response a stopped server left unfinished (how many)."""
    with conn:
        rows = conn.execute(
            "SELECT r.id, r.response FROM unfinished AS u JOIN responses AS r ON r.id = u.id"
        ).fetchall()
        for rid, blob in rows:
            response = orjson.loads(blob)
            response["status"] = "failed"
            response["error"] = {"code": "server_error", "message": STOPPED}
            conn.execute(
                "UPDATE responses SET response = ? WHERE id = ?", (orjson.dumps(response), rid)
            )
        conn.execute("DELETE FROM unfinished")
    return len(rows)


# SQLite's primary result codes (an extended code's low byte) that pass: retry shortly.
SQLITE_BUSY, SQLITE_LOCKED, SQLITE_FULL = 5, 6, 13


def as_store_error(exc: sqlite3.Error) -> StoreError:
    """The StoreError a failed call of the file is (its message names the SQLite error)."""
    code = getattr(exc, "sqlite_errorcode", None)
    why = f"{exc} ({getattr(exc, 'sqlite_errorname', type(exc).__name__)})"
    if code is not None and code & 0xFF in (SQLITE_BUSY, SQLITE_LOCKED, SQLITE_FULL):
        return store_unavailable("SQLite", why)
    return store_failed("SQLite", why)


def _pragma(synchronous: str) -> str:
    value = synchronous.upper()
    if value not in ("OFF", "NORMAL", "FULL", "EXTRA"):
        raise ValueError(f"synchronous must be OFF, NORMAL, FULL or EXTRA, not {synchronous!r}")
    return value


def from_spec(spec: str) -> Store:
    """The store of `--store sqlite:PATH` (parent directories are made); ValueError, with a
    message for the user, when there is no path or the file cannot be opened as a database."""
    rest = spec.partition(":")[2]
    if not rest:
        raise ValueError("--store sqlite:PATH needs a file path, e.g. sqlite:./rollout.db")
    path = Path(rest).expanduser()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return SqliteStore(path)
    except sqlite3.OperationalError as exc:
        locked = getattr(exc, "sqlite_errorcode", 0) & 0xFF in (SQLITE_BUSY, SQLITE_LOCKED)
        held = " (another process has it open: a SQLite file is one server's)" if locked else ""
        raise ValueError(f"cannot open store {spec!r}: {exc}{held}") from exc
    except (OSError, sqlite3.Error, StoreVersionError) as exc:
        raise ValueError(f"cannot open store {spec!r}: {exc}") from exc


# open_store is named here too, for the modules that import it from here.
__all__ = ["SqliteStore", "StoreVersionError", "as_store_error", "from_spec", "open_store"]
