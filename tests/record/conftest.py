# Fixtures and import path for the record/replay tests. Helpers live in `_record_helpers`.
from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
