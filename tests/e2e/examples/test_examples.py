"""Every example in examples/ runs, as a user would run it: `python examples/X.py` in its own
process (each starts its own in-process server), and again with `--base-url` against a live
`rollout serve` process. The pytest example runs under pytest, and the coding-agent CLI page's
configuration is checked against the server's real defaults."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator

import pytest
from openai import OpenAI

from rollout.cli.parser import parser as _parser
from rollout.model.script import load as load_script
from support.processes import ROOT, finish, project_env, serve_process

EXAMPLES = ROOT / "examples"
TIMEOUT = 120

# Each runnable script, and a line its output must contain when it ran to the end.
SCRIPTS = {
    "agent_trio_shapes.py": "all 7 modes made the same calls and gave the same answer",
    "sdk_http.py": "answer after 4 turns:",
    "sdk_websocket.py": "answer after 4 turns on one connection:",
    "sdk_append.py": "completed: one response (resp_",
    "append_transcript.py": '< {"type":"response.completed"',
    "pause_resume_transcripts.py": '"incomplete_details":{"reason":"steered"}',
}
# Against `rollout serve` (its default model: "Do the tests pass?" is one test run, then the
# answer; "Fix the failing test." three tool calls, then the answer).
LIVE = {
    "agent_trio_shapes.py": "http-append  2 turns",
    "sdk_http.py": "answer after 4 turns:",
    "sdk_websocket.py": "answer after 4 turns on one connection:",
    "sdk_append.py": "completed: one response (resp_",
}
PYTEST_EXAMPLE = "test_with_fixture.py"


def check(result: subprocess.CompletedProcess[str], expected: str) -> None:
    output = f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert result.returncode == 0, output
    assert expected in result.stdout, output


@pytest.fixture(scope="module")
def live_server() -> Iterator[str]:
    with serve_process() as served:
        yield served.base_url
        err = finish(served.proc)
        assert served.proc.returncode == 0, err


class Runs:
    """Example processes started all at once (each spends most of its time importing and
    warming up, so together they take a fraction of the time), each awaited by its own test."""

    def __init__(self) -> None:
        self.procs: dict[str, subprocess.Popen[str]] = {}

    def start(self, key: str, *args: str, **extra_env: str) -> None:
        self.procs[key] = subprocess.Popen(
            [sys.executable, *args],
            cwd=ROOT,
            env=project_env(**extra_env),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def result(self, key: str) -> subprocess.CompletedProcess[str]:
        proc = self.procs[key]
        try:
            out, err = proc.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)

    def stop_all(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
            proc.communicate()


@pytest.fixture(scope="module")
def runs(live_server: str) -> Iterator[Runs]:
    runs = Runs()
    try:
        for script in SCRIPTS:
            runs.start(f"standalone {script}", str(EXAMPLES / script))
        for script in LIVE:
            runs.start(f"live {script}", str(EXAMPLES / script), "--base-url", live_server)
        pytest_args = ["-q", "-p", "no:cacheprovider", "-o", "trio_mode=true"]
        runs.start("pytest", "-m", "pytest", *pytest_args, str(EXAMPLES / PYTEST_EXAMPLE))
        # The coding-agent CLI page's generic configuration: only environment variables.
        code = "import openai; print(openai.OpenAI().responses.create(model='m', input='.').status)"
        runs.start("env", "-c", code, OPENAI_BASE_URL=live_server, OPENAI_API_KEY="unused")
        yield runs
    finally:
        runs.stop_all()


def test_every_example_is_run_here() -> None:
    scripts = {p.name for p in EXAMPLES.glob("*.py") if not p.name.startswith("_")}  # _: shared
    assert scripts == set(SCRIPTS) | {PYTEST_EXAMPLE}, (
        "a new example? add it to SCRIPTS in tests/e2e/examples/test_examples.py"
    )


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_example_standalone(script: str, runs: Runs) -> None:
    """`python examples/SCRIPT`: the example starts its own server."""
    check(runs.result(f"standalone {script}"), SCRIPTS[script])


@pytest.mark.parametrize("script", sorted(LIVE))
def test_example_against_rollout_serve(script: str, runs: Runs) -> None:
    """`python examples/SCRIPT --base-url URL` against a `rollout serve` process."""
    check(runs.result(f"live {script}"), LIVE[script])


def test_pytest_example(runs: Runs) -> None:
    """`pytest examples/test_with_fixture.py`: sync and trio tests with the fixture."""
    check(runs.result("pytest"), "8 passed")


# -- model scripts and the coding-agent CLI page ------------------------------------------------


@pytest.mark.parametrize("name", ["model_script.toml", "model_script.json"])
def test_model_scripts_load(name: str) -> None:
    policy = load_script(EXAMPLES / name)
    assert policy.steps


def test_rollout_serve_plays_a_script_file() -> None:
    with (
        serve_process("--script", str(EXAMPLES / "model_script.toml")) as served,
        OpenAI(base_url=served.base_url, api_key="unused", max_retries=0, timeout=10) as client,
    ):
        response = client.responses.create(model="any", input="hi")
        err = finish(served.proc)
    assert served.proc.returncode == 0, err
    [item] = response.output
    assert item.type == "function_call" and item.name == "read_file"
    assert item.arguments == '{"path":"README.md"}'


def cli_page() -> str:
    return (EXAMPLES / "coding_agent_cli.md").read_text()


def serve_default_base_url() -> str:
    [commands] = [a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction)]
    serve = commands.choices["serve"]
    return f"http://{serve.get_default('host')}:{serve.get_default('port')}/v1"


def test_cli_page_urls_are_rollout_serves_default() -> None:
    page = cli_page()
    base_url = serve_default_base_url()
    assert f"OPENAI_BASE_URL={base_url}" in page
    [config] = [tomllib.loads(b) for b in re.findall(r"```toml\n(.*?)```", page, re.S)]
    provider = config["model_providers"][config["model_provider"]]
    assert provider["base_url"] == base_url
    assert provider["wire_api"] == "responses"
    assert f"export {provider['env_key']}=" in page


def test_cli_page_environment_variables_reach_the_server(runs: Runs) -> None:
    """The generic part: a client configured only by OPENAI_BASE_URL and OPENAI_API_KEY."""
    check(runs.result("env"), "completed")
