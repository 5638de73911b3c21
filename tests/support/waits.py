# Waiting for what the server does in the background (billing, parking, closing connections):
# poll a condition until it holds and fail only if it never does. The timeout is a liveness
# bound ("it did not hang"), generous on purpose: a slow machine makes a test slower, not red.
from __future__ import annotations

import time
from collections.abc import Callable

import trio

#: How long a condition may take before the test fails; no test passes or fails on speed.
TIMEOUT = 10.0
_POLL = 0.01


async def wait_for(check: Callable[[], object], timeout: float = TIMEOUT) -> None:
    """In a trio test: wait until `check()` is true, or fail the test."""
    with trio.move_on_after(timeout):
        while not check():
            await trio.sleep(_POLL)
    assert check(), f"the server never got there ({timeout} s): {check}"


def holds_within(check: Callable[[], object], timeout: float = TIMEOUT) -> bool:
    """From a thread (sync clients): whether `check()` became true within `timeout`."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return bool(check())
        time.sleep(_POLL)
    return True


def wait_until(check: Callable[[], object], timeout: float = TIMEOUT) -> None:
    """From a thread (sync clients): wait until `check()` is true, or fail the test."""
    assert holds_within(check, timeout), f"the server never got there ({timeout} s): {check}"
