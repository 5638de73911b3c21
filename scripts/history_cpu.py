"""Server CPU of an http-full turn at about 100k tokens of history, for two checkouts side by side.

    python scripts/history_cpu.py OLD_CHECKOUT NEW_CHECKOUT [--rounds 2]

Each checkout's server runs in its own process (its own `rollout` package, found through
PYTHONPATH), answering a streamed create whose input is a coding-agent history of 143 turns (a
user message, a tool call, its output: about 100k tokens) with "ok". A window of 10 requests is
timed by the server process's CPU clock (/proc/PID/stat), 5 windows per round, the checkouts
alternating round by round; prints each checkout's median and the ratio NEW / OLD in the bench's
format (name value unit target verdict). Only the public API of both checkouts is used
(`rollout.Engine`, `ScriptedPolicy`, `text`, `serve`), so an old commit measures the same way.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys

SERVER = """
import trio, rollout
engine = rollout.Engine(policy=rollout.ScriptedPolicy(lambda ctx: rollout.text("ok")))
async def main():
    async with trio.open_nursery() as n:
        port = await n.start(lambda task_status: rollout.serve(
            engine, port=0, task_status=task_status))
        print(port, flush=True)
trio.run(main)
"""
TURNS = 143  # about 700 tokens each
TOOL = {"type": "function", "name": "exec", "parameters": {"type": "object"}}


def history() -> bytes:
    items: list[dict[str, str]] = []
    for i in range(TURNS):
        ask = f"step {i}: " + "please look at the file src/main.py and fix it " * 40
        items.append({"role": "user", "content": ask})
        call = {"cmd": f"cat src/file{i}.py"}
        items.append(
            {
                "type": "function_call",
                "call_id": f"c{i}",
                "name": "exec",
                "arguments": json.dumps(call),
            }
        )
        output = "def main():\n    print('hello world')\n" * 25
        items.append({"type": "function_call_output", "call_id": f"c{i}", "output": output})
    body = {"model": "m", "input": items, "store": False, "stream": True, "tools": [TOOL]}
    return json.dumps(body).encode()


class Server:
    def __init__(self, checkout: str) -> None:
        env = dict(os.environ, PYTHONPATH=os.path.abspath(checkout))
        self.proc = subprocess.Popen(
            [sys.executable, "-P", "-c", SERVER], stdout=subprocess.PIPE, env=env, cwd=checkout
        )
        assert self.proc.stdout is not None
        self.port = int(self.proc.stdout.readline())

    def cpu_s(self) -> float:
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def turn(self, body: bytes) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        conn.request("POST", "/v1/responses", body, {"Content-Type": "application/json"})
        response = conn.getresponse()
        response.read()
        conn.close()
        if response.status != 200:
            raise RuntimeError(f"status {response.status}")

    def windows(self, body: bytes, windows: int = 5, turns: int = 10) -> list[float]:
        out = []
        for _ in range(windows):
            before = self.cpu_s()
            for _ in range(turns):
                self.turn(body)
            out.append((self.cpu_s() - before) / turns * 1000)
        return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    body = history()
    servers = {"old": Server(args.old), "new": Server(args.new)}
    try:
        ms: dict[str, list[float]] = {"old": [], "new": []}
        for server in servers.values():
            for _ in range(3):  # warm up
                server.turn(body)
        for _ in range(args.rounds):
            for name, server in servers.items():
                ms[name] += server.windows(body)
    finally:
        for server in servers.values():
            server.proc.kill()
    old, new = statistics.median(ms["old"]), statistics.median(ms["new"])
    print(f"history_cpu.http-full.100k.old {old:.4g} ms - info")
    print(f"history_cpu.http-full.100k.new {new:.4g} ms - info")
    ratio = new / old
    print(
        f"history_cpu.http-full.100k.ratio {ratio:.4g} x <=0.6 {'pass' if ratio <= 0.6 else 'fail'}"
    )
    return 0 if ratio <= 0.6 else 1


if __name__ == "__main__":
    sys.exit(main())
