# Import path for the multi-worker tests: their helpers (`_inproc`, two workers in one process;
# `_workers`, `rollout serve --workers N` as a process tree) live beside this file. The Redis
# fixtures they use (`redis_port`, `redis_url`) are in tests/conftest.py, shared with tests/store.
from __future__ import annotations

import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
