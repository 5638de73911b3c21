# Table-driven tests: rows with an id and, for a known bug, its description; each row becomes a
# pytest param (a strict xfail when it names a bug, so a fix is noticed).
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import pytest


class Row(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def bug(self) -> str | None: ...


def params(rows: Sequence[Row]) -> list[Any]:
    return [
        pytest.param(
            row,
            id=row.id,
            marks=[pytest.mark.xfail(strict=True, reason=row.bug)] if row.bug else [],
        )
        for row in rows
    ]


def assert_table(rows: Sequence[Row], at_least: int) -> None:
    """The table has at least `at_least` rows, each with its own id."""
    assert len(rows) >= at_least
    assert len({r.id for r in rows}) == len(rows)
