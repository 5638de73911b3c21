# Fixtures and import path for the WebSocket-mode tests (SDK over a ServerThread, raw
# trio-websocket against an in-process server). Helpers live in `_ws_helpers` beside this file.
from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
