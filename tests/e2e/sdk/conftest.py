# The raw HTTP client of the real-client tests (`httpx2`, the HTTP library this SDK version
# ships with), for what the SDK cannot send; `server`, `client` and `serve` are in
# tests/conftest.py.
from __future__ import annotations

from collections.abc import Iterator

import httpx2 as httpx
import pytest

from rollout.testing.thread import ServerThread
from support.sdk import raw_client


@pytest.fixture
def http(server: ServerThread) -> Iterator[httpx.Client]:
    with raw_client(server.http_base_url) as h:
        yield h
