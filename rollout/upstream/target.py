# Where the real engine is and how to talk to it: its base URL, which API it speaks
# (`chat` completions or `responses`), the API key, how model names map onto its models, and
# the timeouts (connect, first event, between chunks) and pool size of the connection to it.
# One frozen value, checked on construction (UpstreamError says what is wrong, for the command
# line).
from __future__ import annotations

from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit

import attrs

APIS = ("chat", "responses")


class UpstreamError(ValueError):
    """An upstream setting that cannot work (a bad URL, API, timeout or model mapping)."""


@attrs.frozen(kw_only=True)
class UpstreamConfig:
    url: str  # the engine's OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1
    api: str = "chat"  # "chat": POST {url}/chat/completions; "responses": POST {url}/responses
    api_key: str | None = None  # sent as `Authorization: Bearer` when set
    model: str | None = None  # every request names this model upstream (else its own name)
    models: Mapping[str, str] = attrs.field(factory=dict)  # model name -> the upstream's name
    connect_timeout_s: float = 10.0  # to open a connection to the engine
    # From a step's request to the first event of its answer (connecting and the prefill
    # included): before it the client has been sent nothing, so running out is a retryable 500.
    first_byte_timeout_s: float = 120.0
    read_timeout_s: float = 60.0  # between two chunks of a stream, after its first event
    max_connections: int = 256  # connections to the engine at once (then requests queue)

    def __attrs_post_init__(self) -> None:
        split = urlsplit(self.url)
        if split.scheme not in ("http", "https") or not split.hostname:
            raise UpstreamError(f"{self.url!r} is not an http(s) URL")
        if self.api not in APIS:
            raise UpstreamError(f"unknown upstream API {self.api!r}; choose from {', '.join(APIS)}")
        timeouts = (self.connect_timeout_s, self.first_byte_timeout_s, self.read_timeout_s)
        if min(timeouts) <= 0 or self.max_connections < 1:
            raise UpstreamError("upstream timeouts and the connection count must be positive")

    @property
    def base_url(self) -> str:
        return self.url.rstrip("/")

    @property
    def path(self) -> str:
        return "/chat/completions" if self.api == "chat" else "/responses"

    @property
    def official(self) -> bool:
        """The OpenAI API itself (which wants `max_completion_tokens` rather than `max_tokens`)."""
        return (urlsplit(self.url).hostname or "").endswith("api.openai.com")

    def model_for(self, name: str) -> str:
        """The upstream's name for the model a request names."""
        return self.models.get(name) or self.model or name


def parse_models(specs: Sequence[str]) -> tuple[str | None, dict[str, str]]:
    """`--upstream-model` values: `NAME` (every request uses it) or `FROM=TO` (one mapping)."""
    default: str | None = None
    models: dict[str, str] = {}
    for spec in specs:
        source, sep, target = spec.partition("=")
        if not sep:
            if not spec.strip():
                raise UpstreamError("--upstream-model needs a name")
            default = spec.strip()
        elif not source.strip() or not target.strip():
            raise UpstreamError(f"--upstream-model {spec!r}: expected NAME or FROM=TO")
        else:
            models[source.strip()] = target.strip()
    return default, models
