# The OpenResponses compliance suite (the open specification's own tests: HTTP, SSE, WebSocket,
# compaction) against a fresh server, through scripts/compliance.sh. Marked `compliance`; runs
# only where bun is installed and OPENRESPONSES_DIR names a checkout of the suite (it is not part
# of this repository). Every one of its tests must pass.
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "compliance.sh"
SUITE = os.environ.get("OPENRESPONSES_DIR", "")
TESTS = 17

pytestmark = [
    pytest.mark.compliance,
    pytest.mark.skipif(shutil.which("bun") is None, reason="bun is not installed"),
    pytest.mark.skipif(
        not (Path(SUITE) / "bin" / "compliance-test.ts").is_file(),
        reason="OPENRESPONSES_DIR does not name a checkout of the OpenResponses suite",
    ),
]


@pytest.mark.parametrize("model", ["gpt-test", "o4-mini"])  # without and with reasoning
def test_openresponses_compliance_suite(model: str) -> None:
    run = subprocess.run(
        ["bash", str(SCRIPT), SUITE, "--model", model, "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHON": sys.executable},
    )
    report = json.loads(run.stdout)
    status = {r["id"]: r["status"] for r in report["results"]}
    assert len(status) == TESTS, status
    failed = {r["id"]: r.get("errors") for r in report["results"] if r["status"] != "passed"}
    assert not failed, failed
