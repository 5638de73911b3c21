# The trio client: HTTP (h11, keep-alive, SSE) and WebSocket connections to a Responses server,
# typed events (protocol.events), and one agent runner that drives a rollout in any of its modes
# with the same agent code. The modes (http-full, http-chain, ws-full, ws-chain, ws-append,
# http-append, ws-inject, and the ws-steer scenario) are the rows of rollout.client.modes.TABLE.
from rollout.client.agent import AgentResult, Turn, collect, run_agent
from rollout.client.http import ClientError, HttpClient
from rollout.client.modes import MODES, ONE_RESPONSE, SCENARIOS, Mode, mode_named
from rollout.client.ws import WsClient, connect_ws

__all__ = [
    "MODES",
    "ONE_RESPONSE",
    "SCENARIOS",
    "AgentResult",
    "ClientError",
    "HttpClient",
    "Mode",
    "Turn",
    "WsClient",
    "collect",
    "connect_ws",
    "mode_named",
    "run_agent",
]
