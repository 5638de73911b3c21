# Import path for the pause/resume tests (inject, steer, async tools): helpers live in
# `_pause_helpers` beside this file.
from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
