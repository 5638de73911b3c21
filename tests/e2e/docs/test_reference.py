"""docs/reference.md is generated from the code (docs/gen_reference.py) and must match it: a
changed flag, ServerConfig field or field comment fails here until the page is regenerated."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import attrs

from rollout.cli.parser import parser as _parser
from rollout.service.config import ServerConfig
from support.generators import generator as load_generator

ROOT = Path(__file__).resolve().parents[3]
GENERATOR = ROOT / "docs" / "gen_reference.py"
REFERENCE = ROOT / "docs" / "reference.md"


def generator() -> ModuleType:
    return load_generator("gen_reference")


def test_reference_is_up_to_date() -> None:
    expected = generator().render()
    actual = REFERENCE.read_text() if REFERENCE.exists() else ""
    assert actual == expected, (
        "docs/reference.md is out of date with the code: run `python docs/gen_reference.py`"
    )


def test_reference_names_every_flag_and_config_key() -> None:
    text = REFERENCE.read_text()
    gen = generator()
    for name, sub in gen.subcommands(_parser()).items():
        assert f"### rollout {name}" in text
        for action in sub._actions:
            if action.help == argparse.SUPPRESS:  # internal (a worker's index): not documented
                continue
            for option in action.option_strings:
                if option not in ("-h", "--help"):
                    assert f"`{option}" in text, option
    for field in attrs.fields(ServerConfig):
        assert f"| `{field.name}` |" in text, field.name
        assert "(undocumented)" not in text, "a ServerConfig field has no comment"


def test_every_config_field_has_a_comment() -> None:
    sources = generator().config_sources()
    missing = [f.name for f in attrs.fields(ServerConfig) if not sources[f.name].comment]
    assert not missing, f"ServerConfig fields without a trailing comment: {missing}"


def test_the_check_mode_of_the_generator() -> None:
    result = subprocess.run(
        [sys.executable, str(GENERATOR), "--check"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr


def test_every_request_knob_is_documented() -> None:
    """A new CreateRequest field must say what the simulated model does with it, in the
    generated reference (from rollout.model.knobs) and in the protocol choices page."""
    from protocol.request import CreateRequest
    from rollout.model.knobs import KNOBS

    fields = [f.name for f in attrs.fields(CreateRequest)]
    assert sorted(KNOBS) == sorted(fields)
    reference = REFERENCE.read_text()
    choices = (ROOT / "docs" / "protocol-choices.md").read_text()
    for name in fields:
        assert f"| `{name}` |" in reference, name
        assert f"`{name}" in choices, name
