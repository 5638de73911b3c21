# The standard error object (spec §2.1) as every test checks it: exactly `message`, `type`,
# `param` and `code`, a short non-empty message, the expected values (ANY: not checked; None:
# null).
from __future__ import annotations

from typing import Any

from protocol.errors import MAX_MESSAGE  # (the server's bound; docs/reliability.md: ~1 KiB)

ANY: Any = object()  # "any value" in an expectation
MAX_PARAM = 256  # characters of an error's `param`, however long a client's key


def assert_error(
    error: Any,
    *,
    code: str | None = None,
    param: str | None = None,
    type_: str = "invalid_request_error",
) -> dict[str, Any]:
    """The error object: all four keys, `type`, `code`, `param` as expected (None: null);
    returns it. The message and `param` are short whatever the client sent (values are echoed
    truncated)."""
    assert isinstance(error, dict), error
    assert set(error) == {"message", "type", "param", "code"}, error
    assert isinstance(error["message"], str) and error["message"], error
    assert len(error["message"]) <= MAX_MESSAGE, (len(error["message"]), error["message"][:300])
    assert error["param"] is None or len(error["param"]) <= MAX_PARAM, str(error["param"])[:300]
    assert isinstance(error["type"], str), error
    for key in ("code", "param"):
        assert error[key] is None or isinstance(error[key], str), error
    for key, want in (("type", type_), ("code", code), ("param", param)):
        if want is not ANY:
            assert error[key] == want, (key, error)
    return error


def assert_envelope(body: Any, **expected: Any) -> dict[str, Any]:
    """An HTTP error body: `{"error": {...}}` and nothing else; returns the error object."""
    assert isinstance(body, dict) and set(body) == {"error"}, body
    return assert_error(body["error"], **expected)
