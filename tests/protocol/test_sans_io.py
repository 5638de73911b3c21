# protocol/ is sans-IO, like h11: nothing in it may import a module that does I/O, keeps time or
# runs tasks, nor anything from rollout/ (the layers above it).
from __future__ import annotations

import ast
from pathlib import Path

FORBIDDEN = {"trio", "trio_websocket", "h11", "wsproto", "socket", "asyncio", "time", "threading"}
PROTOCOL = Path(__file__).resolve().parents[2] / "protocol"


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_protocol_imports_nothing_that_does_io() -> None:
    files = sorted(PROTOCOL.glob("*.py"))
    assert len(files) > 5
    for path in files:
        bad = imported(path) & (FORBIDDEN | {"rollout"})
        assert not bad, f"{path.name} imports {sorted(bad)}"
