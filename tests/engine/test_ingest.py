# Where a request's items are counted (rollout.engine.ingest.extend): on the event loop, unless
# what is left to tokenize is large. Behind a real engine that is what the process's memo lacks:
# a long history is counted in a worker thread the first time and looked up on the loop after.
from __future__ import annotations

import threading

import pytest

from protocol.items import Item, Message
from rollout.conversation.context import Context
from rollout.conversation.memo import MEMO
from rollout.conversation.work import Work
from rollout.engine import ingest


def _history(tag: str) -> list[Item]:
    text = f"{tag} " + "word " * 20_000  # 100 KB each: 300 KB in all
    return [Message(role="user", content=f"{i} {text}") for i in range(3)]


async def test_a_history_the_memo_holds_is_counted_on_the_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    threads: list[bool] = []
    real = ingest.Context.extend

    def extend(ctx: Context, *args, **kwargs):  # type: ignore[no-untyped-def]
        threads.append(threading.current_thread() is not threading.main_thread())
        return real(ctx, *args, **kwargs)

    monkeypatch.setattr(ingest.Context, "extend", extend)
    MEMO.clear()
    items = _history("memo")
    first, again = Context(memo=True), Context(memo=True)
    await ingest.extend(first, items, Work())
    await ingest.extend(again, items, Work())
    plain = Context()
    await ingest.extend(plain, items, Work())
    assert threads == [True, False, True]  # (a context that counts everything: always)
    assert first.tokens == again.tokens == plain.tokens
    assert first.scan == again.scan == plain.scan
    MEMO.clear()
