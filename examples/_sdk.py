"""What the official-SDK examples share: a function call run locally (rollout.run_exec stands in
for running the shell tool) and their command line (`--base-url URL` for a running server, else
an in-process one). Not an example itself: `sdk_http.py`, `sdk_websocket.py` and `sdk_append.py`
import it."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import rollout
from rollout import ServerThread


def tool_output(call_id: str, name: str, arguments: str, label: str = "  tool: ") -> dict[str, Any]:
    """Run one function call and return its `function_call_output` input item."""
    print(f"{label}{name}({arguments})")
    output = rollout.run_exec(name, arguments)
    return {"type": "function_call_output", "call_id": call_id, "output": output}


def main(run: Callable[[str], None], description: str) -> None:
    """`run(base_url)` against `--base-url`, or against a server started here for the run."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--base-url", help="a running server, e.g. http://127.0.0.1:8000/v1")
    args = parser.parse_args()
    if args.base_url:
        run(args.base_url)
    else:
        with ServerThread() as server:  # the default tool-using model, as `rollout serve` runs
            run(server.http_base_url)
