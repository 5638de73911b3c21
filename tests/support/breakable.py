# A chat-completions engine that a test scripts byte by byte: a raw-socket HTTP server in a
# thread whose every answer is the test's own function of the request (`answer(body, conn)`
# writes the response head and body itself), so it can cut, stall, or send anything at all.
from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from typing import Any

Answer = Callable[[dict[str, Any], socket.socket], None]


def said(body: dict[str, Any]) -> str:
    """The text of the request's last message."""
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else str(content[0]["text"])


class BreakableEngine:
    """Answers each POST with `answer(body, conn)` (the request's JSON, the connection, which
    it writes to), then closes the connection."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/v1"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(65536)
            head, _, body = data.partition(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            while len(body) < length:
                body += conn.recv(65536)
            self.answer(json.loads(body), conn)

    def close(self) -> None:
        self.listener.close()
