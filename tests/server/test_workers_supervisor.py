# The supervisor of `rollout serve --workers N` (rollout.server.workers.Supervisor) with real
# worker processes: a stand-in worker that follows a plan, one step per start (exit with a
# code, or serve until SIGTERM), and the supervisor in a process of its own that is stopped
# with SIGTERM like the real one. A worker that fails its start-up checks (exit code 2) at its
# first start is not started again, and the supervisor exits 2 when no worker is left; one
# that fails them at a restart (its store went away while it served) is started again, until
# it serves, or until the failures last `config_retry_s`; a worker that crashes is restarted.
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from support.processes import project_env

TIMEOUT_S = 60  # a hang guard for every wait

# argv: the plan directory, then --port P --worker-index I (as the supervisor appends them).
# Its plan-I file holds one step per start ("1", "2": exit with that code; "serve": run until
# SIGTERM); the last step repeats. Each start appends a line to starts-I.
WORKER = """
import pathlib, signal, sys, time
plans = pathlib.Path(sys.argv[1])
index = sys.argv[sys.argv.index("--worker-index") + 1]
steps = (plans / f"plan-{index}").read_text().split()
with (plans / f"starts-{index}").open("a") as starts:
    starts.write("start\\n")
n = len((plans / f"starts-{index}").read_text().split())
step = steps[min(n, len(steps)) - 1]
if step != "serve":
    sys.exit(int(step))
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
(plans / f"serving-{index}").touch()
while True:
    time.sleep(1)
"""

# argv: the worker script, the plan directory, the worker count, config_retry_s.
SUPERVISOR = """
import json, logging, socket, sys, trio
from rollout.server.workers import Supervisor
logging.basicConfig(level="INFO", format="%(message)s")
worker, plans, n, retry = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
sock = socket.socket()
sock.bind(("127.0.0.1", 0))
supervisor = Supervisor(
    [sys.executable, worker, plans], sock, n, pauses=(0.01, 0.05), config_retry_s=retry
)
code = trio.run(supervisor.run)
given_up = sorted(supervisor.given_up)
print(json.dumps({"code": code, "starts": supervisor.starts, "given_up": given_up}))
"""


def supervise(
    tmp_path: Path, plans: list[str], retry_s: float = 60.0
) -> tuple[subprocess.Popen[str], Path]:
    worker = tmp_path / "worker.py"
    worker.write_text(WORKER)
    for index, plan in enumerate(plans):
        (tmp_path / f"plan-{index}").write_text(plan)
    log = tmp_path / "supervisor.log"
    command = [sys.executable, "-c", SUPERVISOR, str(worker), str(tmp_path), str(len(plans))]
    with log.open("w") as err:
        proc = subprocess.Popen(
            [*command, str(retry_s)],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=project_env(),
        )
    return proc, log


def result(proc: subprocess.Popen[str]) -> dict[str, object]:
    out, _ = proc.communicate(timeout=TIMEOUT_S)
    outcome: dict[str, object] = json.loads(out)
    return outcome


def starts(tmp_path: Path, index: int) -> int:
    path = tmp_path / f"starts-{index}"
    return len(path.read_text().split()) if path.exists() else 0


def until(path: Path, proc: subprocess.Popen[str], log: Path, text: str | None = None) -> None:
    """Wait until `path` exists (and holds `text`); fail if `proc` exits first (bounded)."""
    deadline = time.monotonic() + TIMEOUT_S
    while not (path.exists() and (text is None or text in path.read_text())):
        assert proc.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.02)


def test_a_worker_failing_its_checks_at_its_first_start_is_not_restarted(
    tmp_path: Path,
) -> None:
    proc, log = supervise(tmp_path, ["2", "2"])
    outcome = result(proc)
    assert outcome == {"code": 2, "starts": 2, "given_up": [0, 1]}, log.read_text()
    assert starts(tmp_path, 0) == starts(tmp_path, 1) == 1
    assert "restarting" not in log.read_text().replace("not restarting it", "")


def test_the_others_serve_on_when_one_worker_is_given_up(tmp_path: Path) -> None:
    proc, log = supervise(tmp_path, ["2", "serve"])
    until(tmp_path / "serving-1", proc, log)
    until(log, proc, log, "not restarting it (1 of 2 workers left)")
    proc.send_signal(signal.SIGTERM)
    assert result(proc) == {"code": 0, "starts": 2, "given_up": [0]}, log.read_text()


def test_a_restarted_worker_failing_its_checks_is_restarted_until_it_serves(
    tmp_path: Path,
) -> None:
    # It crashes (1), then fails its checks twice (the store away), then serves.
    proc, log = supervise(tmp_path, ["1 2 2 serve"])
    until(tmp_path / "serving-0", proc, log)
    proc.send_signal(signal.SIGTERM)
    assert result(proc) == {"code": 0, "starts": 4, "given_up": []}, log.read_text()
    text = log.read_text()
    assert "exited with code 1; restarting" in text
    assert text.count("failed its start-up checks (exit code 2); restarting") == 2


def test_a_restarted_worker_is_given_up_when_its_checks_keep_failing(tmp_path: Path) -> None:
    # It crashes (1), then fails its checks at every restart: given up after config_retry_s.
    proc, log = supervise(tmp_path, ["1 2"], retry_s=2.0)
    outcome = result(proc)
    assert outcome["code"] == 2 and outcome["given_up"] == [0], log.read_text()
    assert starts(tmp_path, 0) == outcome["starts"]
    assert starts(tmp_path, 0) >= 3  # restarted after its first failed check, not given up
    assert "not restarting it (0 of 1 workers left)" in log.read_text()
