# What a model streams in one sampling step, as the sampling loop consumes it: a scripted wait,
# the prompt's counts, reasoning, message text, function calls and their argument deltas, hosted
# tools' calls, the engine's usage, and how the step ended. Every model speaks in these pieces (the
# simulated model: rollout.engine.simulated; a real engine behind the upstream:
# rollout.upstream), so the loop that turns them into events is one. Plain values: no I/O.
from __future__ import annotations

from collections.abc import Sequence

import attrs

from rollout.conversation.calls import AgentCallSpec, Citation, ClientCallSpec, HostedSpec


@attrs.frozen
class Deltas:
    """Deltas as a model releases them: a piece carries every delta released at once (the
    simulated model: all those due before its next pause; a real engine: one streamed chunk), as
    parallel values, so the per-token path has no per-delta object."""

    texts: Sequence[str]
    #: The output tokens in each delta; None: one each. Where a token count is 0, the engine
    #: bills the step in its Usage piece instead.
    counts: Sequence[int] | None = None
    #: JSON writes every text as it is (nothing to escape), known once for the whole text.
    plain: bool = False

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def tokens(self) -> int:
        """The output tokens they cost."""
        return len(self.texts) if self.counts is None else sum(self.counts)

    def count(self, i: int) -> int:
        return 1 if self.counts is None else self.counts[i]

    def cut(self, start: int, stop: int) -> Deltas:
        """Deltas `start` to `stop`."""
        counts = None if self.counts is None else self.counts[start:stop]
        return Deltas(self.texts[start:stop], counts, self.plain)

    def free(self) -> Deltas:
        """The same deltas, billed elsewhere (no tokens)."""
        return Deltas(self.texts, [0] * len(self.texts), self.plain)

    @classmethod
    def unbilled(cls, text: str) -> Deltas:
        """One delta whose tokens the engine bills in its Usage piece."""
        return cls([text], [0])


@attrs.frozen
class Wait:
    """The model takes `seconds` before it samples (a script's think time; a steer ends it)."""

    seconds: float


@attrs.frozen
class Prefilled:
    """The prompt is in: its tokens and how many of them the prefix cache held."""

    prompt_tokens: int
    cached_tokens: int


@attrs.frozen
class ReasoningStart:
    """A reasoning item opens (before the step's output)."""


@attrs.frozen
class Thought:
    """Hidden reasoning decoded: `tokens` billed as reasoning tokens, `text` kept (hidden) for
    the prompt of later steps."""

    tokens: int
    text: str = ""


@attrs.frozen
class Summary:
    """Reasoning summary text (a summary part opens at the first; free: the thought paid)."""

    deltas: Deltas


@attrs.frozen
class ReasoningEnd:
    """The reasoning item is complete; `hidden` is its whole hidden text (sealed into
    `encrypted_content` when the request asks for it)."""

    hidden: str = ""


@attrs.frozen
class MessageStart:
    """An assistant message opens: output text, or a refusal; citations are placed as the
    text reaches their end index."""

    refusal: bool = False
    citations: tuple[Citation, ...] = ()


@attrs.frozen
class Text:
    """Text of the open message."""

    deltas: Deltas


@attrs.frozen
class CallStart:
    """A function call opens; `call_id` is the engine's (a new one is made when None)."""

    name: str
    call_id: str | None = None


@attrs.frozen
class CustomStart:
    """A custom tool's call opens; its input follows as Args pieces."""

    name: str
    call_id: str | None = None


@attrs.frozen
class ClientCall:
    """A built-in client tool's call (shell, local_shell, apply_patch), whole."""

    spec: ClientCallSpec


@attrs.frozen
class AgentCall:
    """A multi-agent action (spawn_agent, wait_agent, ...), whole."""

    spec: AgentCallSpec


@attrs.frozen
class Args:
    """Argument text of the open function call."""

    deltas: Deltas


@attrs.frozen
class Hosted:
    """A hosted tool is called (it runs after the step, as hosted calls do): its item opens."""

    spec: HostedSpec


@attrs.frozen
class Usage:
    """The step's usage as the engine reports it; replaces what the step's pieces counted."""

    prompt_tokens: int
    cached_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0


@attrs.frozen
class Finish:
    """The step ended for `reason`: `stop` (its calls, if any, run next), `length` (the output
    budget: the open item is cut and the response ends incomplete) or `content_filter`."""

    reason: str = "stop"


@attrs.frozen
class Failed:
    """The model failed: the response ends `failed` with this code and message."""

    code: str = "server_error"
    message: str = "The model failed to generate a response."


Piece = (
    Wait
    | Prefilled
    | ReasoningStart
    | Thought
    | Summary
    | ReasoningEnd
    | MessageStart
    | Text
    | AgentCall
    | CallStart
    | CustomStart
    | ClientCall
    | Args
    | Hosted
    | Usage
    | Finish
    | Failed
)

_RUNS = (Text, Args, Summary)  # the pieces whose deltas join into one run


def merged(pieces: list[Piece]) -> list[Piece]:
    """`pieces` with each stretch of consecutive Text (or Args, or Summary) pieces joined into
    one: what arrived together leaves as one run of delta events."""
    out: list[Piece] = []
    for piece in pieces:
        last = out[-1] if out else None
        if isinstance(piece, _RUNS) and type(last) is type(piece):
            assert isinstance(last, _RUNS)
            a, b = last.deltas, piece.deltas
            counts = None
            if a.counts is not None or b.counts is not None:
                counts = [*(a.counts or [1] * len(a)), *(b.counts or [1] * len(b))]
            out[-1] = attrs.evolve(
                piece, deltas=Deltas([*a.texts, *b.texts], counts, a.plain and b.plain)
            )
        else:
            out.append(piece)
    return out
