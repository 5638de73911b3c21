# rollout: a Responses API server with a simulated model, for measuring agent-rollout protocol
# shapes. The public API: `serve` (run in a trio nursery), `Engine` and its profiles and models.
from rollout.engine import Engine
from rollout.model import (
    CallStep,
    DefaultPolicy,
    ErrorStep,
    ScriptedPolicy,
    TextStep,
    call,
    search,
    text,
)
from rollout.profiles import COST_PROFILES, INFERENCE_PROFILES, CostProfile, InferenceProfile
from rollout.server import serve

__all__ = [
    "COST_PROFILES",
    "INFERENCE_PROFILES",
    "CallStep",
    "CostProfile",
    "DefaultPolicy",
    "Engine",
    "ErrorStep",
    "InferenceProfile",
    "ScriptedPolicy",
    "TextStep",
    "call",
    "search",
    "serve",
    "text",
]
