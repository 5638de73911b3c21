# How a decode fails: an Invalid carries the JSON path where it happened (relative to where it
# was raised) and a message template; `to_error` walks a cattrs exception tree down to its first
# leaf, collecting the path (`input[3].call_id`), and makes the one ProtocolError the client is
# sent. The converter (protocol.convert) raises these; protocol.codec turns them into errors.
from typing import TypeGuard

from cattrs.errors import AttributeValidationNote, IterableValidationNote

from protocol.errors import ProtocolError, clip

Path = tuple[str | int, ...]


class Invalid(Exception):
    """A decode failure at `path` (relative to where it was raised); `template` takes {param}."""

    def __init__(self, path: Path, template: str, code: str) -> None:
        super().__init__(template)
        self.path = path
        self.template = template
        self.code = code


#: What a JSON value is called in a message, by Python type (bool before its base class int).
_KINDS: tuple[tuple[type, str], ...] = (
    (type(None), "null"),
    (bool, "a boolean"),
    (int, "an integer"),
    (float, "a decimal"),
    (str, "a string"),
    (list, "an array"),
    (dict, "an object"),
)


INT64 = 2**63  # what the encoder writes back (a larger JSON integer parses as a float)


def whole(value: object) -> TypeGuard[float]:
    """A whole-number float in the 64-bit range (`100.0`): an integer, as in JSON Schema (and
    the real API), decoded as the int."""
    return isinstance(value, float) and value.is_integer() and -INT64 <= value < INT64


def kind_of(value: object) -> str:
    return next((name for t, name in _KINDS if isinstance(value, t)), type(value).__name__)


def wrong_type(expected: str, value: object) -> Invalid:
    return Invalid(
        (),
        f"Invalid type for '{{param}}': expected {expected}, but got {kind_of(value)} instead.",
        "invalid_type",
    )


def at_path(path: Path, inv: Invalid) -> Invalid:
    return Invalid(path + inv.path, inv.template, inv.code)


def missing() -> Invalid:
    return Invalid((), "Missing required parameter: '{param}'.", "missing_required_parameter")


def locate(exc: BaseException) -> tuple[Path, str, str]:
    """Walk a cattrs exception tree down to its first leaf, collecting the JSON path."""
    if isinstance(exc, Invalid):
        return exc.path, exc.template, exc.code
    if isinstance(exc, BaseExceptionGroup):
        sub = exc.exceptions[0]
        step: Path = ()
        for note in getattr(sub, "__notes__", ()):
            if isinstance(note, AttributeValidationNote):
                step = (note.name.rstrip("_") if note.name == "async_" else note.name,)
            elif isinstance(note, IterableValidationNote):
                step = (note.index,)
        path, template, code = locate(sub)
        return step + path, template, code
    if isinstance(exc, KeyError):
        return (), "Missing required parameter: '{param}'.", "missing_required_parameter"
    return (), f"Invalid value for '{{param}}': {clip(str(exc), 200)}", "invalid_value"


def format_path(path: Path) -> str:
    out = ""
    for step in path:
        name = clip(str(step))  # a key of a client's object can be any length
        out += f"[{step}]" if isinstance(step, int) else (f".{name}" if out else name)
    return out


def to_error(exc: BaseException, root: Path) -> ProtocolError:
    path, template, code = locate(exc)
    param = format_path(root + path) or None
    message = template.replace("{param}", param or "body")
    return ProtocolError(message=message, code=code, param=param)
