# Run a server in a background thread with its own trio loop, for synchronous code (the official
# SDK's sync client, plain pytest tests, asyncio programs). Start/stop are blocking calls.
from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from types import TracebackType

import trio

from rollout.engine.engine import Engine
from rollout.server.listen import serve
from rollout.service.capture import Captured
from rollout.service.config import ServerConfig
from rollout.service.service import Service


class Endpoints:
    """Where a running server is: `host` and `port`, and the URLs clients need."""

    host: str
    port: int

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def http_base_url(self) -> str:
        """Ready for `OpenAI(base_url=...)` (the SDK derives the WebSocket URL from it)."""
        return f"{self.url}/v1"

    @property
    def ws_url(self) -> str:
        return f"ws://{self.host}:{self.port}/v1/responses"


class ServerThread(Endpoints):
    """`with ServerThread(engine) as server:` serves on `server.http_base_url` until exit."""

    def __init__(
        self,
        engine: Engine | None = None,
        *,
        host: str = "127.0.0.1",
        config: ServerConfig | None = None,
        record: str | Path | None = None,
        capture: list[Captured] | None = None,
        service: Service | None = None,
    ) -> None:
        self.service = service or Service(engine or Engine(), config or ServerConfig())
        self.engine = self.service.engine
        self.config = self.service.config
        self.host = host
        self._record = record
        self._capture = capture
        self.port = 0
        self._ready = threading.Event()
        self._thread: threading.Thread | None = None
        self._token: trio.lowlevel.TrioToken | None = None
        self._cancel: trio.CancelScope | None = None
        self._error: BaseException | None = None

    async def _main(self) -> None:
        self._token = trio.lowlevel.current_trio_token()
        with trio.CancelScope() as scope:
            self._cancel = scope
            async with trio.open_nursery() as nursery:
                self.port = await nursery.start(
                    lambda task_status: serve(
                        self.engine,
                        host=self.host,
                        port=0,
                        record=self._record,
                        capture=self._capture,
                        service=self.service,
                        task_status=task_status,
                    )
                )
                self._ready.set()

    def _run(self) -> None:
        try:
            trio.run(self._main)
        except BaseException as exc:
            self._error = exc
        finally:
            self._ready.set()

    def start(self) -> ServerThread:
        self._thread = threading.Thread(target=self._run, name="rollout-server", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise RuntimeError("the server failed to start") from self._error
        return self

    def stop(self) -> None:
        if self._thread is None:
            return
        if self._token is not None and self._cancel is not None:
            cancel = self._cancel
            with contextlib.suppress(trio.RunFinishedError):
                trio.from_thread.run_sync(cancel.cancel, trio_token=self._token)
        self._thread.join(timeout=10)
        self._thread = None

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
