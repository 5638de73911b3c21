# The trio client: HTTP (h11, keep-alive, SSE) and WebSocket connections to a Responses server,
# typed events (protocol.events), and one agent runner that drives a rollout in any of six modes
# with the same agent code: http-full, http-chain, ws-full, ws-chain, ws-append, http-append.
from rollout.client.agent import MODES, AgentResult, Turn, collect, run_agent
from rollout.client.http import ClientError, HttpClient
from rollout.client.ws import WsClient, connect_ws

__all__ = [
    "MODES",
    "AgentResult",
    "ClientError",
    "HttpClient",
    "Turn",
    "WsClient",
    "collect",
    "connect_ws",
    "run_agent",
]
