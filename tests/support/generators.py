# The docs' generators (docs/gen_*.py) as modules, for the tests that hold the pages to them.
from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

DOCS = Path(__file__).resolve().parents[2] / "docs"


def generator(name: str) -> ModuleType:
    """docs/NAME.py, loaded as a module (it is a script, not a package's module)."""
    spec = importlib.util.spec_from_file_location(name, DOCS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
