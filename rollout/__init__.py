# rollout: a Responses API server with a simulated model, for measuring agent-rollout protocol
# shapes and for embedding in test rigs. This module is the public API; everything a user needs is
# importable from here, and the subpackages behind it are internals that may move.
from rollout.client import (
    MODES,
    AgentResult,
    ClientError,
    HttpClient,
    WsClient,
    connect_ws,
    run_agent,
)
from rollout.engine.engine import Engine
from rollout.engine.faults import Faults
from rollout.model.policy import (
    CallStep,
    DefaultPolicy,
    ErrorStep,
    ScriptedPolicy,
    TextStep,
    call,
    search,
    text,
)
from rollout.model.profiles import (
    COST_PROFILES,
    INFERENCE_PROFILES,
    MODEL_PROFILES,
    CostProfile,
    InferenceProfile,
    ModelProfile,
)
from rollout.server.listen import serve
from rollout.service.config import ServerConfig
from rollout.testing.thread import ServerThread

__all__ = [
    "COST_PROFILES",
    "INFERENCE_PROFILES",
    "MODEL_PROFILES",
    "MODES",
    "AgentResult",
    "CallStep",
    "ClientError",
    "CostProfile",
    "DefaultPolicy",
    "Engine",
    "ErrorStep",
    "Faults",
    "HttpClient",
    "InferenceProfile",
    "ModelProfile",
    "ScriptedPolicy",
    "ServerConfig",
    "ServerThread",
    "TextStep",
    "WsClient",
    "call",
    "connect_ws",
    "run_agent",
    "search",
    "serve",
    "text",
]
