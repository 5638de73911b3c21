# `rollout compare --agent codex`: the Codex CLI over WebSocket (prewarm, chaining) and HTTP (the
# full history) on one task, one line per figure in the stable `name value unit target verdict`
# format, codex.json and codex.png written. Runs when a `codex` binary is found ($ROLLOUT_CODEX,
# or `codex` on PATH; .ci/run installs the pinned npm package); without one, compare says how to
# get it. The server's marks give each transport's turns (a prewarm is not a turn).
from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import pytest

from rollout.cli import main
from rollout.experiments.sweeps.codex import CODEX_VERSION, TRANSPORTS, server_time

CODEX = os.environ.get("ROLLOUT_CODEX") or shutil.which("codex")


def test_server_time_counts_sampled_turns_and_the_loop() -> None:
    marks = [
        ("received", 0.0),
        ("terminal", 0.1),  # a prewarm: nothing sampled
        ("received", 1.0),
        ("first_token", 1.1),
        ("sampled", 1.2),
        ("terminal", 1.3),
        ("received", 2.0),
        ("sampled", 2.5),
        ("terminal", 2.6),
    ]
    turns, server, loop = server_time(marks)
    assert turns == 2
    assert server == pytest.approx(0.3 + 0.6)
    assert loop == pytest.approx(2.6)


def test_without_codex_compare_says_how_to_get_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ROLLOUT_CODEX", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["compare", "--agent", "codex", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "Codex CLI is not installed" in err and f"@openai/codex@{CODEX_VERSION}" in err
    assert not (tmp_path / "latest").exists()


@pytest.mark.skipif(CODEX is None, reason="the codex CLI is not installed")
def test_compare_drives_codex_over_each_transport(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["compare", "--agent", "codex", "--repeats", "1", "--out", str(tmp_path)]
    assert main(args) == 0
    lines = [x.split() for x in capsys.readouterr().out.splitlines() if x.startswith("codex.")]
    figures = {x[0]: x for x in lines}
    assert all(len(x) == 5 and x[4] == "info" for x in lines)  # name value unit target verdict
    for t in TRANSPORTS:
        assert float(figures[f"codex.{t}.turns"][1]) >= 3  # two commands or more, then the answer
        assert float(figures[f"codex.{t}.commands"][1]) >= 2
        for name in ("e2e", "e2e_per_turn", "loop_per_turn", "per_turn.inference"):
            assert figures[f"codex.{t}.{name}"][2] == "ms"
    assert "codex.ws_vs_http.e2e_per_turn" in figures
    data = orjson.loads((tmp_path / "latest" / "codex.json").read_bytes())
    assert sorted(r["transport"] for r in data["runs"]) == sorted(TRANSPORTS)
    assert all(r["failed_commands"] == 0 and r["final"] for r in data["runs"])
    assert data["inference_profile"]["name"] == "1000tps"
