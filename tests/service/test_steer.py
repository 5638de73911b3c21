# The steerer's registry of a connection's recent responses (rollout.service.steer): it keeps the
# newest `keep`, forgets the oldest after a response's terminal event (not as a new response
# starts), and stays bounded when responses start and never end.
from __future__ import annotations

from typing import Any

from protocol import codec
from rollout.conversation.work import Work
from rollout.engine.engine import Engine
from rollout.service.steer import Steerer


async def _send(lane: Any, event: Any) -> None:
    del lane, event


async def _rollout(engine: Engine) -> Any:
    async def emit(event: Any) -> None:
        del event

    request = codec.decode_create({"model": "m", "input": "hi"})
    return (await engine.prepare(request, Work(), emit)).rollout, request


async def test_the_oldest_responses_are_forgotten_when_one_ends() -> None:
    engine, steerer = Engine(), Steerer(_send, limit=4, keep=3)
    ids = []
    for _ in range(5):
        rollout, request = await _rollout(engine)
        known = steerer.register(None, rollout, request, live=False)
        ids.append(rollout.stream.response.id)
    assert list(steerer.known) == ids  # nothing is forgotten as a response starts
    assert await steerer.ended(known) is None
    assert list(steerer.known) == ids[-3:]


async def test_responses_that_never_end_stay_bounded() -> None:
    engine, steerer = Engine(), Steerer(_send, limit=4, keep=3)
    for _ in range(20):
        rollout, request = await _rollout(engine)
        steerer.register(None, rollout, request, live=False)
        assert len(steerer.known) <= 2 * steerer.keep
