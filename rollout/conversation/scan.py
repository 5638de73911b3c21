# The safety scan's pattern and its fast count. Secrets are rare, so most text is cleared on a
# case-folded copy: by a test for three literals, one of which every match holds, or else by
# literal-prefix searches (each a fast C scan for its first character). Only text where one of
# them hits is matched with the full case-insensitive pattern, so the count is exactly that of
# `SCAN.finditer` over the text.
from __future__ import annotations

import re

# What the safety scan looks for: secrets and obvious injection markers.
SCAN = re.compile(
    r"sk-[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|-----BEGIN [A-Z ]*PRIVATE KEY-----"
    r"|ignore (?:all )?previous instructions|\b\d{3}-\d{2}-\d{4}\b",
    re.IGNORECASE,
)

# Each alternative of SCAN, lower-cased, as a pattern that starts with a literal (the number
# pattern is cut to its part after the first digits: any match of it contains this part).
_PREFILTERS = tuple(
    re.compile(p)
    for p in (
        r"sk-[a-z0-9_-]{20}",
        r"akia[0-9a-z]{16}",
        r"-----begin [a-z ]*private key-----",
        r"ignore (?:all )?previous instructions",
        r"-\d{2}-\d{4}",
    )
)

# Characters that IGNORECASE matches with an ASCII letter, besides its two cases.
_FOLD = (("\u0130", "i"), ("\u0131", "i"), ("\u017f", "s"), ("\u212a", "k"))


def _folded(text: str) -> str:
    """The text lower-cased, with the characters of _FOLD replaced first (one for one, so no
    ASCII run that the pattern could match is broken up)."""
    if not text.isascii():
        for char, ascii_letter in _FOLD:
            if char in text:
                text = text.replace(char, ascii_letter)
    return text.lower()


def findings(text: str) -> int:
    """How many non-overlapping matches of SCAN the text has."""
    folded = _folded(text)
    if "-" not in folded and "akia" not in folded and "ignore" not in folded:
        return 0  # (each alternative holds one of these: most short texts end here)
    if not any(p.search(folded) for p in _PREFILTERS):
        return 0
    return sum(1 for _ in SCAN.finditer(text))
