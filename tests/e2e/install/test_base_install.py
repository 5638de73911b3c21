# The base install runs every `rollout` command. A fresh virtual environment gets the checkout
# with no extras (`pip install .`: only [project.dependencies], from PyPI; the checkout is copied
# first, so the build writes nothing into it). Then `rollout --help`, `rollout SUB --help` for
# each subcommand of the parser (a new one is covered when it is added), `rollout models`, a
# request to `rollout serve`, every module that imports without the extras, and each command
# that needs an extra refusing with one line that names it: exit code 2, no traceback.
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from rollout.cli.parser import parser
from support.processes import served_port

ROOT = Path(__file__).resolve().parents[3]
TIMEOUT_S = 300  # a hang guard for each step (pip's install is most of the test's time)
# What the extras install and the base install must not need (pip names).
EXTRA_ONLY = [
    "coredis",
    "mcp",
    "matplotlib",
    "openai",
    "jsonschema",
    "websockets",
    "agents",
    "pytest",
    "hypothesis",
]
# Modules that only the extras make importable, and the package each needs: the Redis store,
# imported once a `redis://` store was asked for (after the check that coredis is installed),
# and the pytest plugin, loaded by pytest. The cluster layer (rollout.service.cluster, owning,
# eventlog, lost, writer) is typed against rollout.store.shared and imports (rollout.cli
# imports it).
NEEDS_EXTRA = {
    "rollout.store.redis": "coredis",
    "rollout.store.redis_conversations": "coredis",  # (a part of the Redis store)
    "rollout.testing.plugin": "pytest",
}
# Run in the base environment: each module of the two packages, imported; those that fail,
# with the module that was missing.
IMPORT_ALL = """
import importlib, json, pkgutil, sys
failed = {}
for package in ("protocol", "rollout"):
    root = importlib.import_module(package)
    for info in pkgutil.walk_packages(root.__path__, package + "."):
        if info.name.endswith(".__main__"):  # (runs its program when imported)
            continue
        try:
            importlib.import_module(info.name)
        except ModuleNotFoundError as exc:
            failed[info.name] = exc.name
print(json.dumps(failed))
"""


def subcommands() -> list[str]:
    [sub] = [a for a in parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return list(sub.choices)


def _copy_checkout(dest: Path) -> None:
    """What `pip install .` builds from: pyproject.toml, the README it names and the packages."""
    dest.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, dest / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for package in ("rollout", "protocol"):
        shutil.copytree(ROOT / package, dest / package, ignore=ignore)


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The bin directory of a fresh venv with the checkout installed, no extras."""
    root = tmp_path_factory.mktemp("base-install")
    checkout = root / "checkout"
    _copy_checkout(checkout)
    env_dir = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True, timeout=TIMEOUT_S)
    pip = [str(env_dir / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    done = subprocess.run(
        [*pip, "--disable-pip-version-check", str(checkout)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
    )
    assert done.returncode == 0, f"pip install . failed:\n{done.stdout}\n{done.stderr}"
    yield env_dir / "bin"


def run(bin_dir: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A command of the base environment, with nothing of this one on its path."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = os.pathsep.join([str(bin_dir), env.get("PATH", "")])
    command = [str(bin_dir / args[0]), *args[1:]]
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S
    )


def test_the_base_install_has_no_extra(venv: Path, tmp_path: Path) -> None:
    check = (
        "import importlib.util, json\n"
        f"print(json.dumps([m for m in {EXTRA_ONLY!r} if importlib.util.find_spec(m)]))"
    )
    done = run(venv, "python", "-c", check, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


def test_every_command_prints_its_help(venv: Path, tmp_path: Path) -> None:
    names = subcommands()
    assert {"serve", "compare", "bench", "load", "models"} <= set(names)
    for args in [["--help"], *([name, "--help"] for name in names)]:
        done = run(venv, "rollout", *args, cwd=tmp_path)
        assert done.returncode == 0, (args, done.stderr)
        assert "Traceback" not in done.stderr, (args, done.stderr)
        assert done.stdout.startswith("usage: rollout"), (args, done.stdout)


def test_models_prints_the_table(venv: Path, tmp_path: Path) -> None:
    done = run(venv, "rollout", "models", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[:2] == ["model", "window"], done.stdout


def test_serve_answers_a_request(venv: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    proc = subprocess.Popen(
        [str(venv / "rollout"), "serve", "--port", "0", "--tool-calls", "0"],
        cwd=tmp_path,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        port = served_port(proc)
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/responses",
            data=json.dumps({"model": "m", "input": "hi"}).encode(),
            headers={"content-type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=60) as reply:
            assert json.load(reply)["status"] == "completed"
        # An mcp tool needs the mcp extra: the request is refused, saying so.
        mcp = {"type": "mcp", "server_label": "s", "server_url": "http://127.0.0.1:9/mcp"}
        body = {"model": "m", "input": "hi", "tools": [mcp]}
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/responses",
            data=json.dumps(body).encode(),
            headers={"content-type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=60)
        assert refused.value.code == 500
        error = json.load(refused.value)["error"]
        assert error["code"] == "mcp_unavailable"
        assert "pip install 'rollout[mcp]'" in error["message"]
    finally:
        proc.terminate()
        proc.communicate(timeout=60)


def test_only_the_extras_layers_need_an_extra(venv: Path, tmp_path: Path) -> None:
    done = run(venv, "python", "-c", IMPORT_ALL, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    failed = json.loads(done.stdout)
    assert failed == {m: p for m, p in NEEDS_EXTRA.items() if m in failed}, failed
    assert "rollout.cli" not in failed


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["serve", "--store", "redis://127.0.0.1:1/0"],
            "rollout: --store redis://127.0.0.1:1/0: needs pip install 'rollout[redis]'",
        ),
        (
            ["serve", "--workers", "2", "--store", "redis://127.0.0.1:1/0"],
            "rollout: --store redis://127.0.0.1:1/0: needs pip install 'rollout[redis]'",
        ),
        (
            ["load", "--workers", "1,2"],
            "rollout load: --workers: needs pip install 'rollout[redis]'",
        ),
    ],
)
def test_a_command_that_needs_an_extra_says_which(
    venv: Path, tmp_path: Path, args: list[str], line: str
) -> None:
    done = run(venv, "rollout", *args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [line]
    assert done.stdout == ""


def test_bench_runs_its_command(venv: Path, tmp_path: Path) -> None:
    # An unknown name is refused after the bench modules are imported (no bench runs).
    done = run(venv, "rollout", "bench", "no-such-bench", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("rollout bench: unknown ['no-such-bench']"), done.stderr
    assert "Traceback" not in done.stderr
