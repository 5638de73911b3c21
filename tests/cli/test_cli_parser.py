# The command line's help, as `rollout SUB --help` prints it, for every subcommand of the
# parser: each flag states its default once (not `(default: None)` or `(default: [])`, and not
# again when its help names it); `serve` says it serves WebSocket too; `bench` says how long
# each bench takes.
from __future__ import annotations

import argparse
import re

import pytest

from rollout.cli.parser import DefaultsOnceHelpFormatter, parser
from rollout.experiments.bench.run import BENCHES


def subparsers() -> dict[str, argparse.ArgumentParser]:
    [sub] = [a for a in parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def documented(sub: argparse.ArgumentParser) -> list[argparse.Action]:
    return [
        a
        for a in sub._actions
        if not isinstance(a, argparse._HelpAction) and a.help != argparse.SUPPRESS
    ]


def says_something(default: object) -> bool:
    """A default worth stating: not unset, off or empty."""
    return not (default is None or default is False or default in ("", [], ()))


def printed_help(sub: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The help text `--help` prints for `action`, its default included when it adds one."""
    return sub._get_formatter()._expand_help(action)


@pytest.mark.parametrize("name", list(subparsers()))
def test_each_flag_states_its_default_once(name: str) -> None:
    sub = subparsers()[name]
    for action in documented(sub):
        text = printed_help(sub, action)
        flag = "/".join(action.option_strings) or action.dest
        for empty in ("None", "[]", "False", "()", ""):
            assert f"(default: {empty})" not in text, (flag, text)
        stated = text.lower().count("default:")
        assert stated <= 1, (flag, text)
        if action.option_strings and says_something(action.default):
            assert stated == 1, (flag, text)


def test_the_formatter_adds_a_default_only_when_the_help_lacks_it() -> None:
    p = argparse.ArgumentParser(prog="x", formatter_class=DefaultsOnceHelpFormatter)
    p.add_argument("--port", type=int, default=8000, help="port")
    p.add_argument("--seed", type=int, default=0, help="seed")
    p.add_argument("--named", default="a", help="this (default: a, as said)")
    p.add_argument("--unset", help="unset")
    p.add_argument("--many", action="append", default=[], help="many")
    p.add_argument("--on", action="store_true", help="switch")
    text = " ".join(p.format_help().split())
    assert "port (default: 8000)" in text
    assert "seed (default: 0)" in text  # a zero is a default worth saying
    assert text.count("default: a") == 1
    for help in ("unset", "many", "switch"):
        assert f"{help} (default" not in text


def test_serve_says_it_serves_websocket_on_the_same_port() -> None:
    [sub] = [a for a in parser()._actions if isinstance(a, argparse._SubParsersAction)]
    helps = {c.dest: c.help or "" for c in sub._choices_actions}
    assert "WebSocket" in helps["serve"]
    assert "HTTP + SSE" not in helps["serve"]
    description = subparsers()["serve"].description or ""
    assert "ws://HOST:PORT/v1/responses" in description


def test_bench_says_how_long_each_bench_takes() -> None:
    bench = subparsers()["bench"]
    assert re.search(r"about [\d.]+ minutes", bench.description or "")
    [names] = [a for a in documented(bench) if a.dest == "names"]
    for name in BENCHES:
        assert re.search(rf"\b{re.escape(name)} \(\d+ s\b", names.help or ""), name
