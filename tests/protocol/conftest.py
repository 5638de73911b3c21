# Test setup for tests/protocol: makes the shared hypothesis strategies (`_strategies.py`, beside
# this file) importable from every test module here, whatever pytest's import mode.
import sys
from pathlib import Path

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
