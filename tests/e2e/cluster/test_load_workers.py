# `rollout load` against many workers: `--url` (an http:// base URL) with `--api-key` against
# `rollout serve --workers 2` that requires keys, and the scaling run (`--workers 1,2`), which
# starts its own redis-server and servers and prints both runs' figures side by side.
from __future__ import annotations

from pathlib import Path

import pytest
from _workers import workers

from rollout.cli import main


def test_load_with_an_api_key_against_two_workers(
    redis_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ROLLOUT_API_KEYS", "sk-load")
    with workers(redis_url, tmp_path, "--tool-calls", "2") as w:
        args = ["load", "--url", w.url, "--connections", "20", "--calls", "2", "--timeout", "60"]
        assert main([*args, "--api-key", "sk-load"]) == 0
        out = capsys.readouterr().out
        assert "completed 20/20, errors 0" in out
        assert main([*args, "--api-key", "wrong"]) == 1  # every handshake refused: 401
        assert "handshake refused: HTTP 401" in capsys.readouterr().out


def test_scaling_run_prints_both_worker_counts(
    redis_port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    del redis_port  # only for the skip when redis-server is missing
    code = main(["load", "--workers", "1,2", "--connections", "10", "--calls", "2"])
    out = capsys.readouterr().out
    assert code == 0, out
    rows = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert [row[:2] for row in rows] == [["1", "10"], ["2", "10"]]
    assert "[2 workers]" in out


def test_scaling_run_refuses_bad_counts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["load", "--workers", "0,x"]) == 2
    assert "--workers takes counts" in capsys.readouterr().err
