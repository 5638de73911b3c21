# A chat-completions engine that a test scripts byte by byte: a raw-socket HTTP server in a
# thread whose every answer is the test's own function of the request (`answer(body, conn)`
# writes the response head and body itself), so it can cut, stall, or send anything at all.
from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

from openai import OpenAI

from rollout.engine.engine import Engine
from rollout.testing.thread import ServerThread
from rollout.upstream import UpstreamConfig, UpstreamModel

Answer = Callable[[dict[str, Any], socket.socket], None]
SSE_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"


def sse(events: list[dict[str, Any]], done: bool) -> bytes:
    """A whole SSE answer of these events (`done`: ended by `data: [DONE]`, as chat is)."""
    body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
    return SSE_HEAD + body + (b"data: [DONE]\n\n" if done else b"")


def responses_sse(events: list[dict[str, Any]]) -> bytes:
    """A Responses stream of these events, then `response.completed` with a small usage."""
    usage = {"input_tokens": 5, "output_tokens": 3}
    end = {"type": "response.completed", "response": {"status": "completed", "usage": usage}}
    return sse([*events, end], done=False)


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


@contextlib.contextmanager
def in_front(answer: Answer, api: str) -> Iterator[OpenAI]:
    """A rollout server in front of a BreakableEngine that answers with `answer` in the `api`
    dialect (chat, responses); the SDK's client of the server."""
    breakable = BreakableEngine(answer)
    config = UpstreamConfig(url=breakable.url, api=api)
    server = ServerThread(Engine(model=UpstreamModel(config)))
    server.start()
    try:
        yield OpenAI(base_url=server.http_base_url, api_key="k", max_retries=0)
    finally:
        server.stop()
        breakable.close()
