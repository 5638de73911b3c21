# Servers in child processes (rollout.experiments.harness.procs), as bench and load start
# them: a child imports the parent's `rollout`, also when run from a directory holding a
# `rollout/` folder (which `python -c` would put first on the path); a child that does not
# start is a ChildError with its stderr; the load run goes through the same launcher.
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import rollout
from rollout.client import HttpClient, collect
from rollout.experiments.bench.run import _MEMORY_SERVER
from rollout.experiments.harness.procs import (
    ChildError,
    ChildServer,
    child_command,
    cpu_clock,
    running,
)
from rollout.experiments.load.run import LoadError, run_load


@pytest.fixture
def shadowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Work in a directory whose `rollout/` and `protocol/` folders are not the package."""
    for name in ("rollout", "protocol"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(f"raise ImportError('the {name}/ folder')\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_child_imports_the_parents_package(shadowed: Path) -> None:
    command, env = child_command("import rollout, protocol; print(rollout.__file__)")
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == Path(rollout.__file__).resolve()
    # What the fix is about: a plain `python -c` from here imports the folder.
    plain = subprocess.run(
        [command[0], "-c", "import rollout"], env=env, capture_output=True, text=True, timeout=60
    )
    assert plain.returncode != 0 and "the rollout/ folder" in plain.stderr


async def test_the_memory_bench_server_starts_beside_a_rollout_folder(shadowed: Path) -> None:
    body = {
        "model": "m",
        "input": "go",
        "shape": "append",
        "tools": [{"type": "function", "name": "exec", "parameters": {"type": "object"}}],
    }
    async with running(_MEMORY_SERVER) as server:
        async with HttpClient(f"http://127.0.0.1:{server.port}/v1") as http:
            turn = await collect(await http.create(body), 0)
        assert turn.status == "paused"  # the memory bench's model: every rollout suspends
        assert server.rss_mb() > 0 and server.cpu_seconds() >= 0


async def test_the_load_server_starts_beside_a_rollout_folder(shadowed: Path) -> None:
    result = await run_load(connections=2, calls=1, timeout=30)
    assert result.ok, result.summary()


async def test_a_child_that_prints_no_port_is_a_child_error() -> None:
    server = ChildServer("import sys; sys.exit('no port today')")
    with pytest.raises(ChildError, match="did not start: no port today"):
        await server.start()
    assert server.proc.returncode == 1


async def test_load_reports_a_server_that_did_not_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("rollout.experiments.load.run._SERVER", "raise SystemExit('broken')")
    with pytest.raises(LoadError, match="did not start: broken"):
        await run_load(connections=1, calls=1, timeout=5)


async def test_a_childs_cpu_time_comes_from_its_process_clock() -> None:
    """The child's CPU clock is read (nanoseconds, not 10 ms ticks), it only grows, and a child
    that is gone reads nan."""
    burn = "import time; sum(range(3_000_000)); print(1, flush=True); time.sleep(60)"
    async with running(burn) as server:
        assert cpu_clock(server.pid) is not None
        first = server.cpu_seconds()
        assert first > 0 and server.cpu_seconds() >= first
    assert server.cpu_seconds() != server.cpu_seconds()  # nan
