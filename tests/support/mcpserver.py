# A real MCP server process (tests/fixtures/mcp_server.py) on a free loopback port, for the
# fixtures of the suites that call one (tests/e2e/mcp, tests/e2e/append).
from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.processes import finish, free_port, wait_listening

SERVER = Path(__file__).parents[1] / "fixtures" / "mcp_server.py"


def serve_mcp(tmp: pytest.TempPathFactory, transport: str, path: str) -> Iterator[str]:
    """Start the server (`transport`: streamable-http or sse); yield its URL (`path` on it)."""
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
