# Owns: the declared bounds on tool-argument generation (one `Limits` value, every limit in one
# place), the work budget that counts steps against them, and UnsupportedSchema, the error raised
# when a schema cannot be satisfied (or not within the limits). Work is counted in steps, never
# timed: no clocks here or anywhere in this package.
from __future__ import annotations

from typing import Final

import attrs

__all__ = ["DEFAULT_LIMITS", "Budget", "LimitExceeded", "Limits", "UnsupportedSchema"]


class UnsupportedSchema(ValueError):
    """No value can be generated for a schema (unsatisfiable, beyond what this module reads, or
    beyond its `Limits`).

    `path` locates the offending value in JSONPath-like form (`$`, `$.cfg.timeout`, `$.files[0]`);
    the message starts with it.
    """

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class LimitExceeded(UnsupportedSchema):
    """The work budget of one call ran out. Unlike other UnsupportedSchema errors it is never
    recovered from (by leaving an optional property out or trying another branch): it ends the
    call."""


@attrs.frozen
class Limits:
    """What one `generate_arguments` call may do. A schema asking for more fails fast with an
    UnsupportedSchema naming the limit, or is clamped where the clamped value is still valid
    (docs/reliability.md, "Tool-argument generation limits", lists which)."""

    max_steps: int = 100_000
    """Work budget: steps (a generated node, a regex round, a validator call, ~16 characters
    built or matched, ...) per call."""
    max_depth: int = 32
    """Objects and arrays nested in a generated value; also `allOf`/`$ref` indirections that one
    schema node may go through."""
    max_string_length: int = 10_000
    """Characters in one generated string (a larger maxLength is clamped)."""
    max_items: int = 1_000
    """Items in one generated array (a larger maxItems is clamped)."""
    max_properties: int = 1_000
    """Properties in one generated object (a larger maxProperties is clamped)."""
    max_enum: int = 10_000
    """Enum values considered as candidates; later ones are never chosen."""
    max_output_chars: int = 100_000
    """Size of the generated arguments as JSON text."""
    max_pattern_length: int = 4_096
    """Characters in one `pattern` (or `patternProperties` key)."""
    max_nodes: int = 20_000
    """Values generated per call, counting discarded attempts."""


DEFAULT_LIMITS: Final = Limits()

# Fixed bounds. A `$ref` entered more than REF_REPEATS times on one path (or more than
# MAX_REFS_ON_PATH references on it) means the schema has no finite instance; objects, arrays,
# `$ref`/`allOf` and `anyOf`/`oneOf` choices open on one path are held to NESTING_PER_DEPTH *
# Limits.max_depth, and validation to as many levels, which keeps Python's stack shallow.
REF_REPEATS: Final = 24
MAX_REFS_ON_PATH: Final = 200
NESTING_PER_DEPTH: Final = 4

# Characters built, copied or scanned per step of the budget.
CHARS_PER_STEP: Final = 16


@attrs.define
class Budget:
    """Steps spent by one call. `spend` raises LimitExceeded instead of going past `limit`,
    so `used` never exceeds `limit`."""

    limit: int
    used: int = 0

    def spend(self, steps: int, path: str) -> None:
        if self.used + steps > self.limit:
            raise LimitExceeded(
                path,
                f"generating this value needs more than the work budget of {self.limit} steps "
                "(Limits.max_steps); the schema asks for too much work",
            )
        self.used += steps

    def chars(self, count: int, path: str) -> None:
        """Charge for building, copying or scanning `count` characters."""
        self.spend(1 + count // CHARS_PER_STEP, path)


def over_limit(path: str, subject: str, limit: int, name: str) -> UnsupportedSchema:
    """The error for a schema asking for more than a limit allows: "<subject> is over the limit
    of <limit> (Limits.<name>)"."""
    return UnsupportedSchema(path, f"{subject} is over the limit of {limit} (Limits.{name})")
