# A real inference engine behind rollout's protocol shapes: an OpenAI-compatible server (vLLM,
# SGLang, llama.cpp's server, Ollama, LM Studio, the OpenAI API) does the inference, rollout
# keeps everything around it (pre- and post-inference work, WebSocket mode, the connection cache,
# lanes, the append shape, the store, faults, metrics). `rollout serve --upstream URL`.
from rollout.upstream.model import UpstreamModel
from rollout.upstream.target import UpstreamConfig, UpstreamError, parse_models

__all__ = ["UpstreamConfig", "UpstreamError", "UpstreamModel", "parse_models"]
