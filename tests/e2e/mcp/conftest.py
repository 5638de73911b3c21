# A real MCP server process (tests/fixtures/mcp_server.py) on a free loopback port, for the
# whole module: `mcp_url` is its streamable-HTTP endpoint, `mcp_sse_url` another's SSE one.
from __future__ import annotations

from collections.abc import Iterator

import pytest

from support.mcpserver import serve_mcp


@pytest.fixture(scope="module")
def mcp_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from serve_mcp(tmp_path_factory, "streamable-http", "/mcp")


@pytest.fixture(scope="module")
def mcp_sse_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The same server over the SSE transport (a URL ending in /sse)."""
    yield from serve_mcp(tmp_path_factory, "sse", "/sse")
