# Behind a real engine rollout only counts the prompt (the engine prefills and caches it): a
# history resent whole is counted from the process's memo, not tokenized again, and the usage is
# the engine's; a simulated engine never uses the memo (there, every shape's work is measured).
from __future__ import annotations

from typing import Any

import pytest
from openai import OpenAI

from rollout.conversation.memo import MEMO
from rollout.engine.engine import Engine
from rollout.testing.thread import ServerThread
from support import behind

HISTORY: list[Any] = [
    {"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}: " + "words " * 40}
    for i in range(12)
]


def _ask(server: ServerThread, text: str) -> Any:
    client = OpenAI(base_url=server.http_base_url, api_key="test", max_retries=0, timeout=30)
    return client.responses.create(
        model="m", input=[*HISTORY, {"role": "user", "content": text}], store=False
    )


def test_a_resent_history_is_counted_from_the_memo(upstream: Any) -> None:
    server = upstream()
    first = _ask(server, "from the cache")
    hits = MEMO.hits
    second = _ask(server, "from the cache")
    assert first.status == second.status == "completed"
    assert MEMO.hits - hits >= len(HISTORY)  # every long item of the history: a lookup
    assert second.usage.input_tokens == first.usage.input_tokens


@pytest.mark.simulated_only(behind.SIMULATED_ENGINE)
def test_a_simulated_engine_never_uses_the_memo() -> None:
    server = ServerThread(Engine()).start()
    try:
        before = (MEMO.hits, MEMO.misses)
        for _ in range(2):
            assert _ask(server, "hello").status == "completed"
        assert (MEMO.hits, MEMO.misses) == before
    finally:
        server.stop()
