# What a model can ask for in a step, in the engine's own terms: a function call (the client's
# tool, or an async one), a hosted tool's call (web search), and the citations an answer carries.
# Every model (the simulated policy, a real engine behind the upstream) and the loop speak these.
from __future__ import annotations

import attrs


@attrs.frozen(kw_only=True)
class Citation:
    url: str
    title: str
    start_index: int
    end_index: int


@attrs.frozen(kw_only=True)
class FunctionCallSpec:
    name: str
    arguments: str  # JSON text, streamed as argument deltas


@attrs.frozen(kw_only=True)
class WebSearchSpec:
    query: str


CallSpec = FunctionCallSpec | WebSearchSpec
