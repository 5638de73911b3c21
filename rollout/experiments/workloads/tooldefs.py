# The function tools of workloads: real JSON schemas (a shell, apply_patch, read_file, grep, ...)
# with long descriptions, so a workload's tool definitions total about the bytes it declares.
# Every schema takes `call`, the call's number in its session (its output and latency are its own).
from __future__ import annotations

import random
from typing import Any

import orjson

from rollout.experiments.workloads.text import text_of_bytes

_TOOL_NAMES: tuple[tuple[str, dict[str, Any], list[str]], ...] = (
    (
        "shell",
        {
            "command": {"type": "array", "items": {"type": "string"}, "minItems": 1},
            "workdir": {"type": "string"},
            "timeout_ms": {"type": "integer", "minimum": 100, "maximum": 600000},
        },
        ["command"],
    ),
    ("apply_patch", {"input": {"type": "string", "minLength": 10}}, ["input"]),
    (
        "read_file",
        {
            "path": {"type": "string"},
            "offset": {"type": "integer", "minimum": 0},
            "limit": {"type": "integer", "minimum": 1, "maximum": 2000},
        },
        ["path"],
    ),
    (
        "list_dir",
        {"path": {"type": "string"}, "depth": {"type": "integer", "minimum": 1, "maximum": 5}},
        ["path"],
    ),
    (
        "grep",
        {
            "pattern": {"type": "string", "minLength": 1},
            "path": {"type": "string"},
            "ignore_case": {"type": "boolean"},
        },
        ["pattern"],
    ),
    (
        "update_plan",
        {
            "steps": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "step": {"type": "string"},
                        "status": {
                            "type": "string",
                            "enum": ["pending", "in_progress", "completed"],
                        },
                    },
                    "required": ["step", "status"],
                    "additionalProperties": False,
                },
            }
        },
        ["steps"],
    ),
    ("run_tests", {"path": {"type": "string"}, "keyword": {"type": "string"}}, []),
    ("git_diff", {"path": {"type": "string"}, "staged": {"type": "boolean"}}, []),
    ("web_fetch", {"url": {"type": "string", "format": "uri"}}, ["url"]),
    (
        "write_file",
        {"path": {"type": "string"}, "content": {"type": "string"}},
        ["path", "content"],
    ),
    (
        "search_code",
        {
            "query": {"type": "string"},
            "max_results": {"type": "integer", "minimum": 1, "maximum": 50},
        },
        ["query"],
    ),
    ("view_image", {"path": {"type": "string"}}, ["path"]),
)


def tool_defs(rng: random.Random, size: int) -> list[dict[str, Any]]:
    """Function tools whose JSON totals about `size` bytes (long descriptions, real schemas)."""
    tools = []
    count = min(len(_TOOL_NAMES), max(2, size // 1500))
    for name, props_, required in _TOOL_NAMES[:count]:
        # `call` numbers the calls of a session, so each call's output and latency are its own.
        props = {**props_, "call": {"type": "integer", "minimum": 0}}
        tools.append(
            {
                "type": "function",
                "name": name,
                "description": "",
                "parameters": {
                    "type": "object",
                    "properties": props,
                    "required": required,
                    "additionalProperties": False,
                },
            }
        )
    base = len(orjson.dumps(tools))
    per_tool = max(40, (size - base) // len(tools))
    for tool in tools:
        tool["description"] = text_of_bytes(rng, per_tool)
    return tools
