"""Which creates are decoded off the event loop: large bodies, and inputs of many items (whose
decoding costs per item, whatever their bytes), not a long history of a few large messages."""

import threading

import orjson
import pytest

from rollout.service import service as svc
from rollout.service.service import OFF_LOOP_BYTES, OFF_LOOP_ITEMS, input_items, off_loop


def _where() -> bool:
    return threading.current_thread() is threading.main_thread()


@pytest.mark.parametrize(
    ("size", "items", "on_loop"),
    [
        (1000, 0, True),
        (OFF_LOOP_BYTES - 1, OFF_LOOP_ITEMS - 1, True),
        (OFF_LOOP_BYTES, 0, False),
        (10, OFF_LOOP_ITEMS, False),
    ],
)
async def test_off_loop_runs_small_work_inline_and_large_work_in_a_thread(
    size: int, items: int, on_loop: bool
) -> None:
    assert await off_loop(lambda _: _where(), None, size, items) is on_loop


def test_input_items_counts_a_creates_input_list() -> None:
    assert input_items({"input": [{}, {}, {}]}) == 3
    assert input_items({"input": "hi"}) == 0
    assert input_items([1, 2]) == 0


async def test_a_create_of_many_small_items_decodes_in_a_thread_and_a_long_history_does_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from rollout.service.config import ServerConfig

    threads: list[int] = []
    real = svc.trio.to_thread.run_sync

    async def counted(fn, *args):  # type: ignore[no-untyped-def]
        threads.append(1)
        return await real(fn, *args)

    monkeypatch.setattr(svc.trio.to_thread, "run_sync", counted)
    service = object.__new__(svc.Service)
    object.__setattr__(service, "config", ServerConfig())
    big_text = "word " * 60_000  # 300 KB in three messages
    long_history = [{"role": "user", "content": big_text} for _ in range(3)]
    req = await service.decode_create(orjson.dumps({"model": "m", "input": long_history}))
    assert len(req.input) == 3 and threads == []
    many = [{"role": "user", "content": "hi"} for _ in range(OFF_LOOP_ITEMS)]
    req = await service.decode_create(orjson.dumps({"model": "m", "input": many}))
    assert len(req.input) == OFF_LOOP_ITEMS and threads == [1]
