# The independent OpenAI-compatible server of the upstream tests: aimock (npm
# `@copilotkit/aimock`, pinned by package.json and package-lock.json here, installed by `npm ci`
# in this directory; .ci/run does it), started on a free loopback port with fixtures.json, and a
# TCP relay between rollout and it that sees which side ends each connection first.
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import threading
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CLI = HERE / "node_modules" / "@copilotkit" / "aimock" / "dist" / "cli.js"
FIXTURES = HERE / "fixtures.json"
LISTENING = re.compile(r"listening on (http://127\.0\.0\.1:\d+)")
START_TIMEOUT_S = 30


def missing() -> str | None:
    """Why aimock cannot start here, or None."""
    if shutil.which("node") is None:
        return "node is not installed (aimock runs on Node.js)"
    if not CLI.exists():
        return f"aimock is not installed: run `npm ci` in {HERE}"
    return None


class Aimock:
    """A running aimock: `url` is its origin (http://127.0.0.1:PORT)."""

    def __init__(self, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            ["node", str(CLI), "--host", "127.0.0.1", "--port", "0", "--fixtures", str(FIXTURES)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env={**os.environ, "NO_COLOR": "1", **(env or {})},
        )
        self.url = ""
        self.key = (env or {}).get("AIMOCK_API_KEYS")  # its control API wants it too
        found = threading.Event()
        self.log: list[str] = []

        def read() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                self.log.append(line)
                match = LISTENING.search(line)
                if match and not found.is_set():
                    self.url = match.group(1)
                    found.set()

        threading.Thread(target=read, daemon=True).start()
        if not found.wait(START_TIMEOUT_S):
            self.stop()
            raise RuntimeError("aimock did not start:\n" + "".join(self.log))

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()

    def journal(self) -> list[dict[str, Any]]:
        """Every request aimock answered, oldest first."""
        request = urllib.request.Request(f"{self.url}/__aimock/journal?limit=1000")
        if self.key:
            request.add_header("authorization", f"Bearer {self.key}")
        with urllib.request.urlopen(request, timeout=10) as r:
            entries = json.loads(r.read())
        return sorted(entries, key=lambda e: e["timestamp"])

    def requests_for(self, text: str) -> list[dict[str, Any]]:
        """The journal's requests whose messages mention `text`."""
        return [e for e in self.journal() if text in json.dumps(e.get("body"))]


class Relay:
    """Forwards loopback TCP connections to `target` (host, port) and notes, per connection,
    whether the client side (rollout) closed before the server side (aimock) had finished."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.client_closed_first = threading.Event()  # rollout hung up on a live upstream
        self.done: list[bytes] = []  # what each finished upstream reply ended with
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            state = {"server_done": False}
            threading.Thread(target=self._up, args=(client, server, state), daemon=True).start()
            threading.Thread(target=self._down, args=(server, client, state), daemon=True).start()

    def _up(self, client: socket.socket, server: socket.socket, state: dict[str, bool]) -> None:
        """rollout -> aimock; an end of file here is rollout closing the connection."""
        with contextlib.suppress(OSError):
            while data := client.recv(65536):
                server.sendall(data)
        if not state["server_done"]:
            self.client_closed_first.set()
        with contextlib.suppress(OSError):
            server.close()

    def _down(self, server: socket.socket, client: socket.socket, state: dict[str, bool]) -> None:
        """aimock -> rollout; its end of file is the server closing."""
        tail = b""
        with contextlib.suppress(OSError):
            while data := server.recv(65536):
                tail = (tail + data)[-64:]
                if b"[DONE]" in tail:
                    state["server_done"] = True
                    self.done.append(tail)
                client.sendall(data)
        state["server_done"] = True
        with contextlib.suppress(OSError):
            client.close()

    def close(self) -> None:
        self.listener.close()
