# A real MCP server process (tests/fixtures/mcp_server.py) on a free loopback port, for the
# whole module: `mcp_url` is its streamable-HTTP endpoint.
from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.processes import finish, free_port, wait_listening

SERVER = Path(__file__).parents[2] / "fixtures" / "mcp_server.py"


@pytest.fixture(scope="module")
def mcp_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = free_port()
    log = tmp_path_factory.mktemp("mcp") / "server.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, str(SERVER), str(port)], stdout=out, stderr=out, text=True
        )
        try:
            wait_listening(proc, port, log)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            finish(proc)
