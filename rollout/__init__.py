# rollout: a Responses API server with a simulated model, for measuring agent-rollout protocol
# shapes and for embedding in test rigs. This module is the public API; everything a user needs is
# importable from here, and the subpackages behind it are internals that may move.
from rollout.client import (
    MODES,
    SCENARIOS,
    AgentResult,
    ClientError,
    HttpClient,
    WsClient,
    connect_ws,
    run_agent,
)
from rollout.client.replay import normalize, replay_session
from rollout.conversation.calls import FunctionCallSpec
from rollout.conversation.context import Context
from rollout.engine.engine import Engine
from rollout.engine.faults import Faults
from rollout.model.hosted.web_search import WebSearchSpec
from rollout.model.policy import (
    CallStep,
    DefaultPolicy,
    ErrorStep,
    ScriptedPolicy,
    TextStep,
    call,
    refusal,
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
from rollout.model.recorded import recorded_events, replay_requests, script_from_recording
from rollout.model.script import load as load_script
from rollout.server.listen import serve
from rollout.service.capture import Captured
from rollout.service.config import ServerConfig
from rollout.testing.sample import EXEC_TOOL, run_exec
from rollout.testing.thread import ServerThread

__all__ = [
    "COST_PROFILES",
    "EXEC_TOOL",
    "INFERENCE_PROFILES",
    "MODEL_PROFILES",
    "MODES",
    "SCENARIOS",
    "AgentResult",
    "CallStep",
    "Captured",
    "ClientError",
    "Context",
    "CostProfile",
    "DefaultPolicy",
    "Engine",
    "ErrorStep",
    "Faults",
    "FunctionCallSpec",
    "HttpClient",
    "InferenceProfile",
    "ModelProfile",
    "ScriptedPolicy",
    "ServerConfig",
    "ServerThread",
    "TextStep",
    "WebSearchSpec",
    "WsClient",
    "call",
    "connect_ws",
    "load_script",
    "normalize",
    "recorded_events",
    "refusal",
    "replay_requests",
    "replay_session",
    "run_agent",
    "run_exec",
    "script_from_recording",
    "search",
    "serve",
    "text",
]
