# The MCP client behind the `mcp` tool: connect to a remote MCP server (streamable HTTP, or the
# SSE transport for a URL ending in /sse, as the API's guide says), list its tools, call one.
# The official `mcp` package is the optional extra `rollout[mcp]`, imported only here and only
# once a request offers an `mcp` tool (MissingExtra otherwise). Every failure is an McpFailure
# with a message; callers turn it into the API's error or the call's `error`.
from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Mapping
from typing import Any

import attrs
import trio

from rollout.store.base import Extra

MCP = Extra("mcp", "mcp")
TIMEOUT_S = 30.0  # one listing or one call, connection included


class McpFailure(Exception):
    """The server could not be reached or answered with an error; `str()` says which."""


@attrs.frozen(kw_only=True)
class Server:
    """Where an `mcp` tool's server is and what to send it."""

    label: str
    url: str
    headers: Mapping[str, str] = attrs.field(factory=dict)


@contextlib.asynccontextmanager
async def _session(server: Server) -> AsyncIterator[Any]:
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.sse import sse_client
    from mcp.client.streamable_http import streamable_http_client

    headers = dict(server.headers)
    async with contextlib.AsyncExitStack() as stack:
        if server.url.rstrip("/").endswith("/sse"):
            streams = await stack.enter_async_context(sse_client(server.url, headers=headers))
        else:
            http = await stack.enter_async_context(
                httpx2.AsyncClient(headers=headers, timeout=TIMEOUT_S)
            )
            streams = await stack.enter_async_context(
                streamable_http_client(server.url, http_client=http)
            )
        session = await stack.enter_async_context(ClientSession(streams[0], streams[1]))
        await session.initialize()
        yield session


def _failure(exc: BaseException) -> McpFailure:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return McpFailure(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)


async def list_tools(server: Server) -> list[dict[str, Any]]:
    """The server's tools as `mcp_list_tools` shows them (name, input_schema, description,
    annotations)."""
    MCP.require()
    try:
        with trio.fail_after(TIMEOUT_S):
            async with _session(server) as session:
                listed = await session.list_tools()
    except Exception as exc:  # any failure of the server or the transport
        raise _failure(exc) from None
    tools = []
    for tool in listed.tools:
        row: dict[str, Any] = {"name": tool.name, "input_schema": tool.input_schema}
        if tool.description is not None:
            row["description"] = tool.description
        annotations = getattr(tool, "annotations", None)
        row["annotations"] = (
            annotations.model_dump(exclude_none=True) if annotations is not None else None
        )
        tools.append(row)
    return tools


@attrs.frozen
class Result:
    output: str | None
    error: dict[str, Any] | None


async def call_tool(server: Server, name: str, arguments: dict[str, Any]) -> Result:
    """One call over MCP: its text output, or the error the `mcp_call` item carries."""
    MCP.require()
    try:
        with trio.fail_after(TIMEOUT_S):
            async with _session(server) as session:
                result = await session.call_tool(name, arguments)
    except Exception as exc:  # any failure of the server or the transport
        failure = _failure(exc)
        return Result(None, {"type": "http_error", "code": 424, "message": str(failure)})
    texts = [str(getattr(part, "text", "")) for part in result.content]
    if result.is_error:
        content = [part.model_dump(exclude_none=True) for part in result.content]
        return Result(None, {"type": "mcp_tool_execution_error", "content": content})
    return Result("\n".join(texts), None)
