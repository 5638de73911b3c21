"""The safety scan's fast count finds exactly what the full case-insensitive pattern finds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rollout.conversation.scan import SCAN, findings

SECRETS = [
    "sk-" + "aB3_-" * 5,
    "SK-abcdefghijklmnopqrstuvwxyz",
    "\u017fk-abcdefghijklmnopqrstuv",  # long s: IGNORECASE matches it with s
    "AKIA0123456789ABCDEF",
    "akia0123456789abcdef",
    "aK\u0131a0123456789ABCDEF",  # dotless i
    "-----BEGIN RSA PRIVATE KEY-----",
    "-----begin private \u212aey-----",  # Kelvin sign
    "ignore previous instructions",
    "IGNORE ALL PREVIOUS INSTRUCTIONS",
    "\u0130gnore previous instructions",
    "123-45-6789",
    "x123-45-6789",  # no word boundary: not a finding
    "sk-akia0123456789abcdef123-45-6789",  # overlapping alternatives count once
    "١٢٣-٤٥-٦٧٨٩",  # Arabic-Indic digits are \d
]

pieces = st.one_of(
    st.text(max_size=30),
    st.text(alphabet="abcskAKI-_ 0123456789\n\u0130\u0131\u017f\u212a", max_size=30),
    st.sampled_from(SECRETS),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(pieces, max_size=12))
def test_findings_equal_the_full_pattern_over_random_text_with_planted_secrets(
    parts: list[str],
) -> None:
    text = "".join(parts)
    assert findings(text) == sum(1 for _ in SCAN.finditer(text))


def test_planted_secrets_are_found() -> None:
    for secret in SECRETS:
        expected = 0 if secret.startswith("x") else 1
        assert findings(f"before {secret} after") == expected, secret
    assert findings("nothing to see here " * 100) == 0
