# A real MCP server process (tests/fixtures/mcp_server.py) on a free loopback port, for the
# whole module: `mcp_url` is its streamable-HTTP endpoint, `mcp_sse_url` another's SSE one.
from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.processes import finish, free_port, wait_listening

SERVER = Path(__file__).parents[2] / "fixtures" / "mcp_server.py"


def _serve(tmp: pytest.TempPathFactory, transport: str, path: str) -> Iterator[str]:
    port = free_port()
    log = tmp.mktemp("mcp") / "server.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, str(SERVER), str(port), transport], stdout=out, stderr=out, text=True
        )
        try:
            wait_listening(proc, port, log)
            yield f"http://127.0.0.1:{port}{path}"
        finally:
            finish(proc)


@pytest.fixture(scope="module")
def mcp_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    yield from _serve(tmp_path_factory, "streamable-http", "/mcp")


@pytest.fixture(scope="module")
def mcp_sse_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The same server over the SSE transport (a URL ending in /sse)."""
    yield from _serve(tmp_path_factory, "sse", "/sse")
