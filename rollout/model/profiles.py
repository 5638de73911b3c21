# Named profiles: how fast the simulated model is (InferenceProfile), how long the simulated
# services take (CostProfile), what each model name declares (ModelProfile: context window,
# whether it reasons and at which default effort) and how long the prefix cache keeps a prompt.
# Every simulated latency and model trait is declared here, by name, so results can print exactly
# what was simulated. CPU stages (codec, scan, tokenize) are real work and have no entry here.
from __future__ import annotations

import tomllib
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs


@attrs.frozen(kw_only=True)
class InferenceProfile:
    """The simulated model's speed: time to first token, prefill of uncached tokens, decode."""

    name: str
    ttft_s: float = 0.0
    prefill_tps: float = 0.0  # uncached prompt tokens per second; 0 = instant
    decode_tps: float = 0.0  # output tokens per second; 0 = instant

    def prefill_seconds(self, uncached_tokens: int) -> float:
        return uncached_tokens / self.prefill_tps if self.prefill_tps > 0 else 0.0

    def decode_seconds(self, tokens: int) -> float:
        return tokens / self.decode_tps if self.decode_tps > 0 else 0.0


INFERENCE_PROFILES: dict[str, InferenceProfile] = {
    p.name: p
    for p in (
        InferenceProfile(name="instant"),
        # A frontier model before the speed-ups: about 65 tokens/s decode.
        InferenceProfile(name="65tps", ttft_s=0.35, prefill_tps=20_000, decode_tps=65),
        # The 1,000 tokens/s target of the WebSocket-mode launch.
        InferenceProfile(name="1000tps", ttft_s=0.15, prefill_tps=100_000, decode_tps=1000),
        # Bursts to 4,000 tokens/s.
        InferenceProfile(name="4000tps", ttft_s=0.10, prefill_tps=200_000, decode_tps=4000),
    )
}


@attrs.frozen(kw_only=True)
class CostProfile:
    """Declared latencies of the services around inference (seconds). docs/profiles.md says why."""

    name: str
    routing_s: float = 0.0  # model routing decision: once per connection (WS) or request (HTTP)
    safety_base_s: float = 0.0  # safety classifier call, per scan
    safety_per_token_s: float = 0.0  # safety classifier, per input token scanned
    billing_s: float = 0.0  # billing/usage write, once per response (chain) or rollout (append)
    web_search_s: float = 0.0  # the hosted web-search service, per call
    code_interpreter_s: float = 0.0  # the hosted code interpreter, per call
    file_search_s: float = 0.0  # the hosted file search, per call
    image_generation_s: float = 0.0  # the hosted image generation, per call
    connection_setup_s: float = 0.0  # per new connection (auth, session setup)

    def safety_seconds(self, tokens: int) -> float:
        if tokens == 0:
            return 0.0
        return self.safety_base_s + tokens * self.safety_per_token_s


COST_PROFILES: dict[str, CostProfile] = {
    p.name: p
    for p in (
        CostProfile(name="cpu-only"),
        CostProfile(
            name="service",
            routing_s=0.010,
            safety_base_s=0.004,
            safety_per_token_s=0.000_000_5,
            billing_s=0.015,
            web_search_s=0.300,
            code_interpreter_s=0.500,
            file_search_s=0.200,
            image_generation_s=1.000,
            connection_setup_s=0.020,
        ),
    )
}


@attrs.frozen(kw_only=True)
class ModelProfile:
    """What a model name declares: its context window, and whether it reasons (then each
    sampling step spends `REASONING_TOKENS[effort]` tokens before its output)."""

    name: str  # a model name, or a prefix ending in "*" (the longest match wins)
    context_window: int = 128_000  # prompt tokens a request may hold
    reasoning: bool = False
    default_effort: str | None = None  # the effort when the request names none


#: The models the simulated model knows, with their published windows and default efforts. A
#: name not listed gets DEFAULT_MODEL (128k tokens, no reasoning).
MODEL_PROFILES: dict[str, ModelProfile] = {
    p.name: p
    for p in (
        ModelProfile(name="gpt-4o*", context_window=128_000),
        ModelProfile(name="gpt-4.1*", context_window=1_047_576),
        ModelProfile(name="o1*", context_window=200_000, reasoning=True, default_effort="medium"),
        ModelProfile(name="o3*", context_window=200_000, reasoning=True, default_effort="medium"),
        ModelProfile(
            name="o4-mini*", context_window=200_000, reasoning=True, default_effort="medium"
        ),
        ModelProfile(
            name="gpt-5*", context_window=400_000, reasoning=True, default_effort="medium"
        ),
        ModelProfile(name="gpt-5-chat*", context_window=128_000),
        ModelProfile(
            name="gpt-5.1*", context_window=400_000, reasoning=True, default_effort="none"
        ),
        ModelProfile(
            name="gpt-5.2*", context_window=400_000, reasoning=True, default_effort="none"
        ),
        ModelProfile(
            name="gpt-5.1-codex*", context_window=400_000, reasoning=True, default_effort="medium"
        ),
    )
}
DEFAULT_MODEL = ModelProfile(name="*")

#: Reasoning tokens one sampling step of a reasoning model spends, by effort. They are decoded
#: at the inference profile's speed and billed as output (`reasoning_tokens`).
REASONING_TOKENS: dict[str, int] = {
    "none": 0,
    "minimal": 16,
    "low": 64,
    "medium": 256,
    "high": 1024,
    "xhigh": 2048,
    "max": 4096,
}

#: How long the prefix cache keeps an unused prompt prefix, by `prompt_cache_retention`
#: (`in_memory`: minutes of inactivity, as the caching guide says; `24h`) or by
#: `prompt_cache_options.ttl` (`30m`, `12h`: a minimum lifetime). Without either: `24h`, the
#: documented default for organisations without zero data retention.
CACHE_TTL_S: dict[str, float] = {
    "in_memory": 600.0,
    "24h": 86_400.0,
    "30m": 1800.0,
    "12h": 43_200.0,
}
DEFAULT_RETENTION = "24h"


def model_profile(name: str, table: Mapping[str, ModelProfile] | None = None) -> ModelProfile:
    """The profile of a model name: an exact entry, else the longest matching `prefix*`."""
    table = MODEL_PROFILES if table is None else table
    if name in table:
        return table[name]
    best: ModelProfile | None = None
    for key, profile in table.items():
        if key.endswith("*") and name.startswith(key[:-1]):
            if best is None or len(key) > len(best.name):
                best = profile
    return best or DEFAULT_MODEL


def read_only(table: Mapping[str, ModelProfile]) -> Mapping[str, ModelProfile]:
    """A model table as an engine keeps it: a read-only copy (so what Lookups remembers of it
    holds until a table is assigned anew)."""
    return types.MappingProxyType(dict(table))


LOOKUPS_KEPT = 1024  # model names whose profile Lookups remembers
LOOKUP_NAME_CHARS = 256  # and the longest name it remembers


@attrs.define
class Lookups:
    """The profiles of model names in one read-only table, remembered for LOOKUPS_KEPT names of
    up to LOOKUP_NAME_CHARS: a name that matches no entry exactly is looked up among the
    prefixes once, not at each create (other names are looked up each time)."""

    table: Mapping[str, ModelProfile]
    known: dict[str, ModelProfile] = attrs.field(factory=dict)

    def profile(self, name: str) -> ModelProfile:
        found = self.known.get(name)
        if found is None:
            found = model_profile(name, self.table)
            if len(self.known) < LOOKUPS_KEPT and len(name) <= LOOKUP_NAME_CHARS:
                self.known[name] = found
        return found


def served_models() -> list[str]:
    """Model names listed by `GET /v1/models`: each declared name (a prefix entry by its prefix).
    Any other name is served too, as the default profile."""
    return [p.name.removesuffix("*") for p in MODEL_PROFILES.values()]


def model_table() -> list[str]:
    """The model profiles as printed by `rollout models`."""
    lines = [f"{'model':<18} {'window':>9}  reasons  default effort"]
    for p in [*MODEL_PROFILES.values(), DEFAULT_MODEL]:
        reasons = "yes" if p.reasoning else "no"
        lines.append(f"{p.name:<18} {p.context_window:>9}  {reasons:<7}  {p.default_effort or '-'}")
    tokens = ", ".join(f"{k} {v}" for k, v in REASONING_TOKENS.items())
    return [*lines, f"reasoning tokens per step: {tokens}"]


class ProfileError(ValueError):
    pass


def inference_profile(name: str) -> InferenceProfile:
    try:
        return INFERENCE_PROFILES[name]
    except KeyError:
        known = ", ".join(INFERENCE_PROFILES)
        raise ProfileError(f"unknown inference profile {name!r} (known: {known})") from None


def cost_profile(spec: str) -> CostProfile:
    """A named cost profile, or one read from a TOML file (`path.toml`)."""
    if spec in COST_PROFILES:
        return COST_PROFILES[spec]
    path = Path(spec)
    if path.suffix == ".toml":
        return _cost_profile_from_toml(path)
    known = ", ".join(COST_PROFILES)
    raise ProfileError(f"unknown cost profile {spec!r} (known: {known}, or a .toml file)")


def _cost_profile_from_toml(path: Path) -> CostProfile:
    try:
        data: dict[str, Any] = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ProfileError(f"cannot read cost profile {path}: {exc}") from None
    fields = {f.name for f in attrs.fields(CostProfile)}
    unknown = set(data) - fields
    if unknown:
        raise ProfileError(f"{path}: unknown keys {sorted(unknown)} (known: {sorted(fields)})")
    values: dict[str, Any] = {"name": path.stem, **data}
    for key, value in values.items():
        bad = isinstance(value, bool) or not isinstance(value, int | float) or value < 0
        if key != "name" and bad:
            raise ProfileError(f"{path}: {key} must be a non-negative number of seconds")
    return CostProfile(**values)
