# The items of a multi-agent response (the real API's multi-agent beta: the SDK's
# types/beta/beta_response_output_item.py and beta_response_input_item_param.py): a
# multi-agent action the model called (`multi_agent_call`), what it returned
# (`multi_agent_call_output`), a message between agents (`agent_message`), and the `agent`
# field (`{"agent_name": ...}`) that every item made inside such a response carries. The
# actions' argument shapes are this project's (docs/protocol-choices.md); so are the names.
from typing import Literal, get_args

import attrs

from protocol.parts import ContentPart, OutputText

AgentAction = Literal[
    "spawn_agent", "interrupt_agent", "list_agents", "send_message", "followup_task", "wait_agent"
]
AGENT_ACTIONS: tuple[str, ...] = get_args(AgentAction)
ROOT_AGENT = "root"  # the name of the agent that answers the response (the one the client asked)


@attrs.frozen(kw_only=True)
class AgentRef:
    """`agent` of an item: the agent that produced it."""

    agent_name: str


@attrs.frozen(kw_only=True)
class MultiAgentCall:
    type: Literal["multi_agent_call"] = "multi_agent_call"
    id: str | None = None  # (optional as input)
    action: AgentAction
    arguments: str  # JSON text
    call_id: str
    agent: AgentRef | None = None


@attrs.frozen(kw_only=True)
class MultiAgentCallOutput:
    type: Literal["multi_agent_call_output"] = "multi_agent_call_output"
    id: str | None = None
    action: AgentAction
    call_id: str
    output: tuple[OutputText, ...]
    agent: AgentRef | None = None


@attrs.frozen(kw_only=True)
class AgentMessage:
    """A message one agent sent another (`send_message`), in the recipient's context."""

    type: Literal["agent_message"] = "agent_message"
    id: str | None = None
    author: str
    recipient: str
    content: tuple[ContentPart, ...]
    agent: AgentRef | None = None


AgentItem = MultiAgentCall | MultiAgentCallOutput | AgentMessage
AGENT_ITEMS: tuple[type[AgentItem], ...] = (MultiAgentCall, MultiAgentCallOutput, AgentMessage)
#: The id prefix of each (as stored).
AGENT_PREFIX: dict[type, str] = {
    MultiAgentCall: "mac",
    MultiAgentCallOutput: "maco",
    AgentMessage: "amsg",
}
#: The keys each leaves off the wire when unset.
OMIT_NONE: tuple[tuple[type, tuple[str, ...]], ...] = tuple(
    (cls, ("id", "agent")) for cls in AGENT_ITEMS
)


def output_text(item: MultiAgentCallOutput) -> str:
    return "\n".join(part.text for part in item.output)
