# What the server logs, checked: nothing with a traceback and nothing at ERROR or above (the
# root logger and "rollout"), whatever a client sent.
from __future__ import annotations

import logging

import pytest


def watch_logs(caplog: pytest.LogCaptureFixture) -> None:
    """Capture WARNING and above from everywhere, "rollout" included."""
    caplog.set_level(logging.WARNING)
    caplog.set_level(logging.WARNING, logger="rollout")


def assert_no_tracebacks(caplog: pytest.LogCaptureFixture) -> None:
    """No record with a traceback, none at ERROR or above."""
    bad = [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    assert not bad, [f"{r.levelname} {r.name}: {r.getMessage()} {r.exc_info!r}" for r in bad]
