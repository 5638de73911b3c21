# The SQLite store's conversations and item index (the ConversationStore protocol of
# store/conversations.py): a table of conversations, one of their items (in order of a rowid
# that only grows, so each append is one transaction and two racing appends both land), and the
# item index (`items`: id -> item, owner, source). A mixin of SqliteStore (store/sqlite.py),
# which owns the connection, the worker thread and the owner secret.
from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import orjson

from protocol import codec
from protocol.items import Item
from rollout.store.base import items_of
from rollout.store.conversations import IndexedItem, StoredConversation, indexable

T = TypeVar("T")

#: Made on open (when missing) in every file, whatever its version: they only add.
TABLES = (
    "CREATE TABLE IF NOT EXISTS conversations (id TEXT PRIMARY KEY, owner TEXT, "
    "created_at INTEGER, metadata BLOB)",
    "CREATE TABLE IF NOT EXISTS conversation_items (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
    "conversation_id TEXT NOT NULL, item_id TEXT, item BLOB)",
    "CREATE INDEX IF NOT EXISTS conversation_items_by_conversation "
    "ON conversation_items (conversation_id, seq)",
    "CREATE TABLE IF NOT EXISTS items (id TEXT PRIMARY KEY, source TEXT, owner TEXT, item BLOB)",
    "CREATE INDEX IF NOT EXISTS items_by_source ON items (source)",
)
INDEX = "INSERT OR REPLACE INTO items (id, source, owner, item) VALUES (?, ?, ?, ?)"


def index_rows(items: Sequence[Item], source: str, owner: str | None) -> list[tuple[Any, ...]]:
    """The rows of the item index for `items` kept at `source` (owner already hashed)."""
    return [
        (item_id, source, owner, orjson.dumps(codec.to_json(item)))
        for item_id, item in indexable(items)
    ]


class SqliteConversations:
    """ConversationStore on SqliteStore's connection."""

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        raise NotImplementedError  # (SqliteStore's)

    def owner_hash(self, key: str) -> str:
        raise NotImplementedError  # (SqliteStore's)

    def _owner(self, owner: str | None, hashed: object) -> str | None:
        return self.owner_hash(owner) if owner is not None and hashed is None else owner

    async def create_conversation(self, conv: StoredConversation, items: Sequence[Item]) -> None:
        owner = self._owner(conv.owner, conv.hashed)
        row = (conv.id, owner, conv.created_at, orjson.dumps(conv.metadata))
        rows = [(conv.id, i.id, orjson.dumps(codec.to_json(i))) for i in items]
        index = index_rows(items, conv.id, owner)

        def write(conn: sqlite3.Connection) -> None:
            with conn:
                conn.execute(
                    "INSERT INTO conversations (id, owner, created_at, metadata) "
                    "VALUES (?, ?, ?, ?)",
                    row,
                )
                conn.executemany(
                    "INSERT INTO conversation_items (conversation_id, item_id, item) "
                    "VALUES (?, ?, ?)",
                    rows,
                )
                conn.executemany(INDEX, index)

        await self._run(write)

    async def get_conversation(self, conv_id: str) -> StoredConversation | None:
        def read(conn: sqlite3.Connection) -> tuple[Any, ...] | None:
            row: tuple[Any, ...] | None = conn.execute(
                "SELECT owner, created_at, metadata FROM conversations WHERE id = ?", (conv_id,)
            ).fetchone()
            return row

        row = await self._run(read)
        if row is None:
            return None
        owner, created_at, metadata = row
        return StoredConversation(
            id=conv_id,
            created_at=created_at,
            metadata=orjson.loads(metadata),
            owner=owner,
            hashed=self.owner_hash,
        )

    async def set_metadata(self, conv_id: str, metadata: dict[str, str]) -> bool:
        def write(conn: sqlite3.Connection) -> bool:
            with conn:
                cursor = conn.execute(
                    "UPDATE conversations SET metadata = ? WHERE id = ?",
                    (orjson.dumps(metadata), conv_id),
                )
            return cursor.rowcount > 0

        return await self._run(write)

    async def delete_conversation(self, conv_id: str) -> bool:
        def remove(conn: sqlite3.Connection) -> bool:
            with conn:
                cursor = conn.execute("DELETE FROM conversations WHERE id = ?", (conv_id,))
                conn.execute("DELETE FROM conversation_items WHERE conversation_id = ?", (conv_id,))
                conn.execute("DELETE FROM items WHERE source = ?", (conv_id,))
            return cursor.rowcount > 0

        return await self._run(remove)

    async def add_items(self, conv_id: str, items: Sequence[Item]) -> bool:
        encoded = [(conv_id, i.id, orjson.dumps(codec.to_json(i))) for i in items]

        def write(conn: sqlite3.Connection) -> bool:
            with conn:  # one transaction: the check, the append and the index
                row = conn.execute(
                    "SELECT owner FROM conversations WHERE id = ?", (conv_id,)
                ).fetchone()
                if row is None:
                    return False
                conn.executemany(
                    "INSERT INTO conversation_items (conversation_id, item_id, item) "
                    "VALUES (?, ?, ?)",
                    encoded,
                )
                conn.executemany(INDEX, index_rows(items, conv_id, row[0]))
            return True

        return await self._run(write)

    async def conversation_items(self, conv_id: str) -> list[Item]:
        def read(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
            return conn.execute(
                "SELECT item FROM conversation_items WHERE conversation_id = ? ORDER BY seq",
                (conv_id,),
            ).fetchall()

        rows = await self._run(read)
        return items_of([orjson.loads(r[0]) for r in rows])

    async def delete_item(self, conv_id: str, item_id: str) -> bool:
        def remove(conn: sqlite3.Connection) -> bool:
            with conn:
                cursor = conn.execute(
                    "DELETE FROM conversation_items WHERE conversation_id = ? AND item_id = ?",
                    (conv_id, item_id),
                )
                conn.execute("DELETE FROM items WHERE id = ? AND source = ?", (item_id, conv_id))
            return cursor.rowcount > 0

        return await self._run(remove)

    async def find_items(self, item_ids: Sequence[str]) -> dict[str, IndexedItem]:
        ids = list(dict.fromkeys(item_ids))[:1000]

        def read(conn: sqlite3.Connection) -> list[tuple[Any, ...]]:
            marks = ", ".join("?" * len(ids))
            return conn.execute(
                f"SELECT id, source, owner, item FROM items WHERE id IN ({marks})", ids
            ).fetchall()

        if not ids:
            return {}
        rows = await self._run(read)
        return {
            item_id: IndexedItem(
                item=items_of([orjson.loads(item)])[0],
                source=source,
                owner=owner,
                hashed=self.owner_hash,
            )
            for item_id, source, owner, item in rows
        }


__all__ = ["TABLES", "SqliteConversations", "index_rows"]
