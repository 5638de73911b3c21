"""The simulated model's pieces (rollout.engine.simulated): a step whose tokens are all due at
once is streamed without an async generator per text, and gives the same pieces as the general
path."""

from __future__ import annotations

from typing import Any

import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from rollout.conversation.calls import AgentCallSpec, CustomCallSpec, FunctionCallSpec
from rollout.engine import simulated
from rollout.model import pieces as p
from rollout.model.hosted.web_search import WebSearchSpec
from rollout.model.steps import CallStep


class Unpaced:
    unpaced = True

    def due(self, n: int, now: float) -> float | None:
        return None

    async def sleep(self, due: float) -> None:
        raise AssertionError("nothing is paced")

    async def token(self, n: int = 1) -> None:
        pass


class NoBudget:
    budget_left = None


texts = st.text(max_size=40)
specs = st.one_of(
    st.builds(FunctionCallSpec, name=st.sampled_from(["exec", "read"]), arguments=texts),
    st.builds(CustomCallSpec, name=st.just("patch"), input=texts),
    st.builds(WebSearchSpec, query=texts),
    st.builds(AgentCallSpec, action=st.just("spawn_agent"), arguments=texts),
)


def general(step: CallStep) -> list[p.Piece]:
    async def collect() -> list[p.Piece]:
        r: Any = NoBudget()
        return [piece async for piece in simulated._calls(r, step, Unpaced())]

    return trio.run(collect)


def shape(pieces: list[p.Piece]) -> list[Any]:
    """Pieces as comparable values (Deltas' texts as lists)."""
    out: list[Any] = []
    for piece in pieces:
        deltas = getattr(piece, "deltas", None)
        if deltas is None:
            out.append(piece)
        else:
            out.append((type(piece), list(deltas.texts), deltas.counts, deltas.plain))
    return out


@settings(deadline=None)  # (the first example loads the tokenizer)
@given(st.lists(specs, max_size=4), texts)
def test_a_step_of_calls_all_due_streams_as_the_general_path_does(
    calls: list[Any], text: str
) -> None:
    step = CallStep(calls=tuple(calls), text=text)
    assert shape(list(simulated._due_calls(step))) == shape(general(step))
