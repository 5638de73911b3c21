# A reasoning item's `encrypted_content`: the opaque blob that carries the model's hidden
# reasoning to a later request (`include: ["reasoning.encrypted_content"]`, sent back as input
# with `store: false`). Sealed with a key the caller holds (SHA-256 keystream + HMAC-SHA256), so
# clients cannot read or alter it; a blob that fails to open gets the real API's error.
# Sans-IO and pure: the key is passed in, the nonce derives from the item id.
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac

import attrs
import orjson

from protocol.errors import ProtocolError

VERSION = b"\x80\x00\x00"  # base64 makes blobs start with "gAAA", as the real API's do
_NONCE = 16
_MAC = 32


@attrs.frozen(kw_only=True)
class Sealed:
    """What a blob restores: the hidden reasoning a step decoded before its output."""

    item_id: str
    tokens: int  # reasoning tokens the step spent (output tokens, billed once)
    text: str  # the hidden reasoning, rendered into the prompt of later turns


def _keystream(key: bytes, nonce: bytes, n: int) -> bytes:
    out = bytearray()
    block = 0
    while len(out) < n:
        out += hashlib.sha256(key + nonce + block.to_bytes(8, "big")).digest()
        block += 1
    return bytes(out[:n])


def _mac(key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, hashlib.sha256).digest()


def seal(reasoning: Sealed, key: bytes) -> str:
    plain = orjson.dumps({"id": reasoning.item_id, "n": reasoning.tokens, "t": reasoning.text})
    nonce = hashlib.sha256(b"nonce:" + reasoning.item_id.encode()).digest()[:_NONCE]
    cipher = bytes(a ^ b for a, b in zip(plain, _keystream(key, nonce, len(plain)), strict=True))
    body = VERSION + nonce + cipher
    return base64.urlsafe_b64encode(body + _mac(key, body)).decode()


def invalid_encrypted_content(blob: str, item_id: str | None) -> ProtocolError:
    shown = f"{blob[:4]}...{blob[-4:]}" if len(blob) > 12 else blob
    where = f"for item {item_id} " if item_id else f"{shown} "
    return ProtocolError(
        message=f"The encrypted content {where}could not be verified. "
        "Reason: Encrypted content could not be decrypted or parsed.",
        code="invalid_encrypted_content",
    )


def unseal(blob: str, key: bytes, item_id: str | None = None) -> Sealed:
    """The reasoning a blob carries; `invalid_encrypted_content` if it was not sealed with
    `key` or was altered."""
    try:
        raw = base64.urlsafe_b64decode(blob.encode("ascii"))
    except (binascii.Error, UnicodeEncodeError, ValueError):
        raise invalid_encrypted_content(blob, item_id) from None
    body, mac = raw[:-_MAC], raw[-_MAC:]
    head = len(VERSION)
    ok = len(raw) > head + _NONCE + _MAC and body[:head] == VERSION
    if not ok or not hmac.compare_digest(mac, _mac(key, body)):
        raise invalid_encrypted_content(blob, item_id)
    nonce, cipher = body[head : head + _NONCE], body[head + _NONCE :]
    plain = bytes(a ^ b for a, b in zip(cipher, _keystream(key, nonce, len(cipher)), strict=True))
    data = orjson.loads(plain)
    return Sealed(item_id=data["id"], tokens=data["n"], text=data["t"])


__all__ = ["Sealed", "invalid_encrypted_content", "seal", "unseal"]
