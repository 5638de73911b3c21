# The modes a rollout runs in (`rollout compare --modes`, `run_agent(mode, ...)`), declared once:
# each is a row of TABLE, naming its transport and its shape (how each turn after the first is
# sent), and the names the rest of the project uses (MODES, SCENARIOS, ONE_RESPONSE) are read
# off the table. Adding a mode is adding its row (and, for a shape of its own, the code that
# sends its turns in rollout.client.agent).
from __future__ import annotations

from typing import Literal

import attrs

Transport = Literal["http", "ws"]
#: How each turn after the first is sent: `full` resends the whole history, `chain` sends the
#: tool outputs with `previous_response_id`, `append` appends them to the paused response, and
#: `inject` injects them into a multi-agent response waiting at its calls.
Shape = Literal["full", "chain", "append", "inject"]


@attrs.frozen
class Mode:
    """One way to run a rollout with the same agent code."""

    name: str
    transport: Transport
    shape: Shape
    store: bool = False  # the responses are stored (a chain over HTTP reads them back)
    steer: bool = False  # one `response.steer` right after the first response is created
    scenario: bool = False  # changes the rollout itself: not in the default comparison

    @property
    def one_response(self) -> bool:
        """The whole rollout is one response (its turns are steps of it)."""
        return self.shape in ("append", "inject")

    @property
    def at_call(self) -> bool:
        """A turn ends at its first function call done, not at a pause or terminal event (a
        multi-agent response waits there without a pause event)."""
        return self.shape == "inject"


TABLE: tuple[Mode, ...] = (
    Mode("http-full", "http", "full"),
    Mode("http-chain", "http", "chain", store=True),
    Mode("ws-full", "ws", "full"),
    Mode("ws-chain", "ws", "chain"),
    Mode("ws-append", "ws", "append"),
    Mode("http-append", "http", "append"),
    Mode("ws-inject", "ws", "inject"),
    Mode("ws-steer", "ws", "chain", steer=True, scenario=True),
)
BY_NAME: dict[str, Mode] = {m.name: m for m in TABLE}

#: The modes of a comparison, in the order of its tables and figures.
MODES = tuple(m.name for m in TABLE if not m.scenario)
#: Modes that change the rollout itself (so they are not in the default comparison).
SCENARIOS = tuple(m.name for m in TABLE if m.scenario)
#: Modes whose whole rollout is one response.
ONE_RESPONSE = frozenset(m.name for m in TABLE if m.one_response)


def mode_named(name: str) -> Mode:
    """The mode called `name`; ValueError naming the choices if there is none."""
    try:
        return BY_NAME[name]
    except KeyError:
        choices = ", ".join(MODES + SCENARIOS)
        raise ValueError(f"unknown mode {name!r}; choose from {choices}") from None
