# The input a model writes for a `custom` tool, held to the tool's `format`: free text (the
# caller's), or a sentence of its grammar (`syntax: regex`, matched in full by Python's `re`;
# `syntax: lark`, parsed by the `lark` package). Deterministic under the caller's Random.
from __future__ import annotations

from collections.abc import Mapping
from random import Random
from typing import Any

from rollout.model.grammars.cfg import lark_sample
from rollout.model.grammars.regex import GrammarUnsupported, regex_sample

__all__ = ["GrammarUnsupported", "custom_input", "lark_sample", "regex_sample"]


def custom_input(fmt: Mapping[str, Any] | None, rng: Random, free_text: str) -> str:
    """Input valid under `fmt` (a custom tool's `format`; None or `text`: `free_text`)."""
    if not fmt or fmt.get("type") != "grammar":
        return free_text
    definition = fmt.get("definition")
    if not isinstance(definition, str):
        raise GrammarUnsupported("the grammar has no definition")
    if fmt.get("syntax") == "regex":
        return regex_sample(definition, rng)
    if fmt.get("syntax") == "lark":
        return lark_sample(definition, rng)
    raise GrammarUnsupported(f"unknown grammar syntax {fmt.get('syntax')!r}")
