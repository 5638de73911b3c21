# One figure of `rollout bench`: a value, its unit, its target and whether it met it, printed
# as one stable line `name value unit target pass|fail|info`.
from __future__ import annotations

from collections.abc import Callable

import attrs


@attrs.frozen
class Figure:
    name: str
    value: float
    unit: str
    target: str = "-"
    passed: bool | None = None  # None: informational

    def line(self) -> str:
        verdict = "info" if self.passed is None else ("pass" if self.passed else "fail")
        return f"{self.name} {self.value:.4g} {self.unit} {self.target} {verdict}"


Report = Callable[[Figure], None]
