# Tests for rollout.model.args: generated arguments validate (with the jsonschema library, format
# checking on) for realistic coding-agent tool schemas, generation is deterministic per seed, and
# unsatisfiable schemas raise UnsupportedSchema naming the JSON path.
from __future__ import annotations

import datetime
import ipaddress
import json
import random
import re
import uuid
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rollout.model.args import UnsupportedSchema, generate_arguments

SHELL = {
    "type": "object",
    "properties": {
        "command": {
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "description": "The command to execute, as argv.",
        },
        "workdir": {"type": "string", "description": "Working directory."},
        "timeout_ms": {"type": "integer", "minimum": 1, "maximum": 600_000},
    },
    "required": ["command"],
    "additionalProperties": False,
}

APPLY_PATCH = {
    "type": "object",
    "properties": {
        "input": {
            "type": "string",
            "description": "The entire contents of the apply_patch command.",
            "minLength": 1,
        }
    },
    "required": ["input"],
    "additionalProperties": False,
}

READ_FILE = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1},
        "offset": {"type": "integer", "minimum": 1, "description": "1-based line to start at."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 2000},
    },
    "required": ["path"],
    "additionalProperties": False,
}

WEB_FETCH = {
    "type": "object",
    "properties": {
        "url": {"type": "string", "format": "uri"},
        "max_length": {"type": "integer", "exclusiveMinimum": 0, "maximum": 100_000},
        "raw": {"type": "boolean"},
        "headers": {"type": "object", "additionalProperties": {"type": "string"}},
    },
    "required": ["url"],
}

CREATE_ISSUE = {  # nested objects, arrays with uniqueItems, enums
    "type": "object",
    "properties": {
        "repo": {
            "type": "object",
            "properties": {
                "owner": {"type": "string", "pattern": "^[a-z0-9-]+$"},
                "name": {"type": "string", "minLength": 1, "maxLength": 40},
            },
            "required": ["owner", "name"],
            "additionalProperties": False,
        },
        "issue": {
            "type": "object",
            "properties": {
                "title": {"type": "string", "minLength": 5, "maxLength": 80},
                "body": {"type": "string"},
                "labels": {
                    "type": "array",
                    "items": {"enum": ["bug", "feature", "docs", "question"]},
                    "uniqueItems": True,
                    "maxItems": 3,
                },
                "priority": {"type": "string", "enum": ["low", "medium", "high"]},
            },
            "required": ["title", "priority"],
        },
    },
    "required": ["repo", "issue"],
    "additionalProperties": False,
}

WEATHER = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "unit": {"enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "enum": [1, 3, 7]},
        "detailed": {"const": True},
    },
    "required": ["city", "unit", "days", "detailed"],
}

MULTI_EDIT = {  # arrays of objects
    "type": "object",
    "properties": {
        "file_path": {"type": "string"},
        "edits": {
            "type": "array",
            "minItems": 1,
            "maxItems": 5,
            "items": {
                "type": "object",
                "properties": {
                    "old_string": {"type": "string", "minLength": 1},
                    "new_string": {"type": "string"},
                    "replace_all": {"type": "boolean"},
                },
                "required": ["old_string", "new_string"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["file_path", "edits"],
}

STRICT_SEARCH = {  # OpenAI strict mode: everything required, optional ones nullable
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 3, "maxLength": 60},
        "max_results": {
            "anyOf": [{"type": "integer", "minimum": 1, "maximum": 50}, {"type": "null"}]
        },
        "since": {"type": ["string", "null"], "format": "date"},
        "site": {"anyOf": [{"type": "string", "format": "hostname"}, {"type": "null"}]},
    },
    "required": ["query", "max_results", "since", "site"],
    "additionalProperties": False,
}

TODO_DEFS = {
    "$defs": {
        "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
        "todo": {
            "type": "object",
            "properties": {
                "id": {"type": "string", "format": "uuid"},
                "content": {"type": "string", "minLength": 1},
                "status": {"$ref": "#/$defs/status"},
            },
            "required": ["id", "content", "status"],
            "additionalProperties": False,
        },
    },
    "type": "object",
    "properties": {"todos": {"type": "array", "items": {"$ref": "#/$defs/todo"}, "minItems": 1}},
    "required": ["todos"],
}

TREE = {  # recursive: every node must have children
    "$defs": {
        "node": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 1},
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
            },
            "required": ["name", "children"],
            "additionalProperties": False,
        }
    },
    "type": "object",
    "properties": {"root": {"$ref": "#/$defs/node"}},
    "required": ["root"],
}

LINKED_LIST = {  # recursive through anyOf-with-null, draft-7 `definitions`
    "definitions": {
        "step": {
            "type": "object",
            "properties": {
                "command": {"type": "string"},
                "next": {"anyOf": [{"$ref": "#/definitions/step"}, {"type": "null"}]},
            },
            "required": ["command", "next"],
        }
    },
    "type": "object",
    "properties": {"plan": {"$ref": "#/definitions/step"}},
    "required": ["plan"],
}

PATTERNS = {
    "type": "object",
    "properties": {
        "ticket": {"type": "string", "pattern": "^[A-Z]{2,4}-\\d{1,5}$"},
        "phone": {"type": "string", "pattern": "^\\d{3}-\\d{4}$"},
        "slug": {"type": "string", "pattern": "^[a-z]+(-[a-z]+)*$", "minLength": 12},
        "sha": {"type": "string", "pattern": "^[0-9a-f]{7,40}$"},
        "version": {"type": "string", "pattern": "^v\\d+\\.\\d+\\.\\d+$"},
        "name": {"type": "string", "pattern": "^[a-z_]+$", "maxLength": 16},
        "contains_todo": {"type": "string", "pattern": "TODO"},
        "branch": {"type": "string", "pattern": "^(main|release/\\d+\\.\\d+)$"},
    },
    "required": ["ticket", "phone", "slug", "sha", "version", "name", "contains_todo", "branch"],
}

NUMBERS = {  # multipleOf and exclusive bounds
    "type": "object",
    "properties": {
        "amount": {"type": "number", "multipleOf": 0.01, "minimum": 0, "maximum": 1000},
        "step": {"type": "integer", "multipleOf": 5, "minimum": 7, "maximum": 40},
        "ratio": {"type": "number", "multipleOf": 0.25, "exclusiveMinimum": 0, "maximum": 2},
        "temperature": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 2},
        "count": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 3},
        "offset": {"type": "integer", "minimum": -10, "maximum": -5},
        "big": {"type": "integer", "minimum": 1_000_000},
    },
    "required": ["amount", "step", "ratio", "temperature", "count", "offset", "big"],
}

FORMATS = {
    "type": "object",
    "properties": {
        "when": {"type": "string", "format": "date-time"},
        "day": {"type": "string", "format": "date"},
        "at": {"type": "string", "format": "time"},
        "id": {"type": "string", "format": "uuid"},
        "ip": {"type": "string", "format": "ipv4"},
        "host": {"type": "string", "format": "hostname"},
        "email": {"type": "string", "format": "email"},
        "link": {"type": "string", "format": "uri"},
    },
    "required": ["when", "day", "at", "id", "ip", "host", "email", "link"],
}

COMPUTER_ACTION = {  # oneOf discriminated by const
    "type": "object",
    "properties": {
        "action": {
            "oneOf": [
                {
                    "type": "object",
                    "properties": {
                        "type": {"const": "click"},
                        "x": {"type": "integer", "minimum": 0, "maximum": 1920},
                        "y": {"type": "integer", "minimum": 0, "maximum": 1080},
                    },
                    "required": ["type", "x", "y"],
                    "additionalProperties": False,
                },
                {
                    "type": "object",
                    "properties": {"type": {"const": "type"}, "text": {"type": "string"}},
                    "required": ["type", "text"],
                    "additionalProperties": False,
                },
                {
                    "type": "object",
                    "properties": {
                        "type": {"const": "scroll"},
                        "dy": {"type": "integer", "minimum": -500, "maximum": 500},
                    },
                    "required": ["type", "dy"],
                    "additionalProperties": False,
                },
            ]
        }
    },
    "required": ["action"],
}

ALL_OF = {  # allOf merging, $ref siblings, additionalProperties across parts
    "definitions": {
        "base": {
            "type": "object",
            "properties": {"id": {"type": "string", "format": "uuid"}, "note": {"type": "string"}},
            "required": ["id"],
        }
    },
    "allOf": [
        {"$ref": "#/definitions/base"},
        {
            "properties": {"retries": {"type": "integer", "minimum": 0, "maximum": 5}},
            "required": ["retries"],
        },
        {"properties": {"retries": {"multipleOf": 2}}},
    ],
}

TUPLES_AND_INFERENCE = {  # prefixItems, items: false, no `type` anywhere, type lists
    "properties": {
        "point": {"prefixItems": [{"type": "number"}, {"type": "number"}], "items": False},
        "range": {
            "type": "array",
            "prefixItems": [{"type": "integer", "minimum": 1}, {"type": "integer", "minimum": 1}],
            "minItems": 2,
        },
        "tags": {"items": {"type": "string", "maxLength": 10}, "minItems": 2, "maxItems": 4},
        "value": {"type": ["integer", "string", "boolean"]},
        "limits": {"minimum": 1, "maximum": 9},
        "label": {"maxLength": 8},
        "anything": {},
    },
    "required": ["point", "range", "tags", "value", "limits", "label", "anything"],
}

GREP = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string", "minLength": 1},
        "path": {"type": "string"},
        "glob": {"type": "string"},
        "output_mode": {"type": "string", "enum": ["content", "files_with_matches", "count"]},
        "-i": {"type": "boolean"},
        "head_limit": {"type": "number"},
        "context": {
            "type": "object",
            "minProperties": 2,
            "additionalProperties": {"type": "integer"},
        },
    },
    "required": ["pattern", "context"],
    "additionalProperties": False,
}

DEPENDENT = {
    "type": "object",
    "properties": {
        "start_line": {"type": "integer", "minimum": 1},
        "end_line": {"type": "integer", "minimum": 1},
        "path": {"type": "string"},
    },
    "required": ["path"],
    "dependentRequired": {"start_line": ["end_line"]},
    "minProperties": 2,
    "maxProperties": 3,
}

DEPLOY = {  # conditionals: if/then/else, not, dependentSchemas
    "type": "object",
    "properties": {
        "env": {"enum": ["prod", "staging", "dev"]},
        "confirm": {"type": "boolean"},
        "replicas": {"type": "integer", "minimum": 1, "maximum": 20},
        "branch": {"type": "string", "not": {"const": "main"}},
        "canary": {"type": "integer", "minimum": 1, "maximum": 100},
    },
    "required": ["env", "replicas"],
    "if": {"properties": {"env": {"const": "prod"}}},
    "then": {
        "properties": {"confirm": {"const": True}, "replicas": {"minimum": 3}},
        "required": ["confirm"],
    },
    "else": {"properties": {"replicas": {"maximum": 2}}},
    "dependentSchemas": {"canary": {"properties": {"env": {"const": "prod"}}}},
}

SCHEMAS: dict[str, dict[str, Any]] = {
    "shell": SHELL,
    "apply_patch": APPLY_PATCH,
    "read_file": READ_FILE,
    "web_fetch": WEB_FETCH,
    "create_issue": CREATE_ISSUE,
    "weather": WEATHER,
    "multi_edit": MULTI_EDIT,
    "strict_search": STRICT_SEARCH,
    "todo_defs": TODO_DEFS,
    "tree": TREE,
    "linked_list": LINKED_LIST,
    "patterns": PATTERNS,
    "numbers": NUMBERS,
    "formats": FORMATS,
    "computer_action": COMPUTER_ACTION,
    "all_of": ALL_OF,
    "tuples_and_inference": TUPLES_AND_INFERENCE,
    "grep": GREP,
    "dependent": DEPENDENT,
    "deploy": DEPLOY,
}

# What generated shell commands start with.
PROGRAMS = {"bash", "ls", "git", "pytest", "cat", "grep", "python", "npm", "cargo", "make", "rg"}
PROGRAMS |= {"sed", "find", "go"}


def assert_valid(schema: dict[str, Any], value: Any) -> None:
    validator = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    errors = sorted(validator.iter_errors(value), key=lambda e: list(e.path))
    assert not errors, f"{json.dumps(value)}\n" + "\n".join(e.message for e in errors)
    assert json.loads(json.dumps(value)) == value  # plain JSON data


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_generated_arguments_validate(name: str) -> None:
    schema = SCHEMAS[name]
    jsonschema.Draft202012Validator.check_schema(schema)
    for seed in range(25):
        assert_valid(schema, generate_arguments(schema, random.Random(seed)))


@given(seed=st.integers(min_value=0, max_value=2**64 - 1), name=st.sampled_from(sorted(SCHEMAS)))
@settings(max_examples=300, deadline=None)
def test_any_seed_gives_valid_arguments(seed: int, name: str) -> None:
    schema = SCHEMAS[name]
    assert_valid(schema, generate_arguments(schema, random.Random(seed)))


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_deterministic_per_seed(name: str) -> None:
    schema = SCHEMAS[name]
    runs = [json.dumps(generate_arguments(schema, random.Random(seed))) for seed in range(10)]
    assert runs == [json.dumps(generate_arguments(schema, random.Random(s))) for s in range(10)]
    assert len(set(runs)) > 1, "different seeds should give different arguments"


def test_uses_only_the_given_rng() -> None:
    global_state = random.getstate()
    rng = random.Random(7)
    generate_arguments(CREATE_ISSUE, rng)
    assert random.getstate() == global_state
    # The rng advanced: a second call continues the same stream, deterministically.
    again = random.Random(7)
    generate_arguments(CREATE_ISSUE, again)
    assert generate_arguments(CREATE_ISSUE, rng) == generate_arguments(CREATE_ISSUE, again)


@pytest.mark.parametrize(
    "schema", [None, {}, {"type": "object"}, {"type": "object", "properties": {}}]
)
def test_empty_schemas_give_empty_object(schema: dict[str, Any] | None) -> None:
    assert generate_arguments(schema, random.Random(0)) == {}


def test_strings_look_like_agent_arguments() -> None:
    for seed in range(20):
        rng = random.Random(seed)
        read = generate_arguments(READ_FILE, rng)
        assert re.fullmatch(r"[\w.-]+(/[\w.-]+)*", read["path"]), read
        assert not read["path"].startswith("/")
        shell = generate_arguments(SHELL, rng)
        assert shell["command"][0] in PROGRAMS
        fetch = generate_arguments(WEB_FETCH, rng)
        assert fetch["url"].startswith("https://example.com/")
        patch = generate_arguments(APPLY_PATCH, rng)
        assert patch["input"].startswith("*** Begin Patch\n")
        search = generate_arguments(STRICT_SEARCH, rng)
        assert 3 <= len(search["query"]) <= 60
        assert re.fullmatch(r"[a-z]+( [a-z]+)*", search["query"]), search


def test_command_strings_and_query_words() -> None:
    schema = {
        "type": "object",
        "properties": {"cmd": {"type": "string"}, "q": {"type": "string"}},
        "required": ["cmd", "q"],
    }
    for seed in range(10):
        value = generate_arguments(schema, random.Random(seed))
        assert value["cmd"].split()[0] in PROGRAMS
        assert value["q"].replace(" ", "").isalpha()


def test_lengths_are_respected_for_hinted_strings() -> None:
    schema = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "minLength": 30, "maxLength": 32},
            "url": {"type": "string", "maxLength": 22},
            "command": {"type": "string", "maxLength": 4},
            "title": {"type": "string", "minLength": 0, "maxLength": 0},
        },
        "required": ["path", "url", "command", "title"],
    }
    for seed in range(20):
        assert_valid(schema, generate_arguments(schema, random.Random(seed)))


def test_formats_parse() -> None:
    for seed in range(20):
        value = generate_arguments(FORMATS, random.Random(seed))
        datetime.datetime.fromisoformat(value["when"].replace("Z", "+00:00"))
        datetime.date.fromisoformat(value["day"])
        datetime.time.fromisoformat(value["at"].replace("Z", "+00:00"))
        uuid.UUID(value["id"])
        ipaddress.IPv4Address(value["ip"])
        assert re.fullmatch(r"[^@\s]+@[^@\s]+\.[a-z]+", value["email"])


def test_recursion_terminates_with_bounded_depth() -> None:
    def depth(node: dict[str, Any]) -> int:
        return 1 + max((depth(c) for c in node["children"]), default=0)

    def length(step: dict[str, Any] | None) -> int:
        return 0 if step is None else 1 + length(step["next"])

    for seed in range(30):
        tree = generate_arguments(TREE, random.Random(seed))
        assert 1 <= depth(tree["root"]) <= 4
        plan = generate_arguments(LINKED_LIST, random.Random(seed))
        assert 1 <= length(plan["plan"]) <= 4


def test_one_of_value_matches_exactly_one_branch() -> None:
    # The branches overlap on lengths 3..5: the value must avoid that range.
    schema = {
        "type": "object",
        "properties": {
            "word": {
                "oneOf": [
                    {"type": "string", "maxLength": 5},
                    {"type": "string", "minLength": 3},
                ]
            }
        },
        "required": ["word"],
    }
    for seed in range(20):
        value = generate_arguments(schema, random.Random(seed))
        assert_valid(schema, value)
        assert not 3 <= len(value["word"]) <= 5
    kinds = {
        generate_arguments(COMPUTER_ACTION, random.Random(s))["action"]["type"] for s in range(30)
    }
    assert kinds == {"click", "type", "scroll"}


def test_draft4_boolean_exclusive_bounds() -> None:
    schema = {
        "type": "object",
        "properties": {
            "x": {
                "type": "number",
                "minimum": 0,
                "exclusiveMinimum": True,
                "maximum": 1,
                "exclusiveMaximum": True,
            },
            "n": {
                "type": "integer",
                "minimum": 1,
                "exclusiveMinimum": True,
                "maximum": 3,
                "exclusiveMaximum": True,
            },
            "items": {
                "type": "array",
                "items": [{"type": "string"}, {"type": "integer"}],
                "additionalItems": False,
                "minItems": 2,
            },
        },
        "required": ["x", "n", "items"],
    }
    jsonschema.Draft4Validator.check_schema(schema)
    for seed in range(20):
        value = generate_arguments(schema, random.Random(seed))
        jsonschema.Draft4Validator(schema).validate(value)
        assert value["n"] == 2


def test_optional_properties_vary_and_required_are_always_present() -> None:
    seen: set[tuple[str, ...]] = set()
    for seed in range(40):
        value = generate_arguments(READ_FILE, random.Random(seed))
        assert "path" in value
        seen.add(tuple(sorted(value)))
    assert len(seen) > 2


def test_only_declared_properties_with_additional_properties_false() -> None:
    for seed in range(20):
        value = generate_arguments(SHELL, random.Random(seed))
        assert set(value) <= {"command", "workdir", "timeout_ms"}


@pytest.mark.parametrize(
    ("schema", "path"),
    [
        (
            {
                "type": "object",
                "properties": {"name": {"type": "string", "minLength": 5, "maxLength": 2}},
                "required": ["name"],
            },
            "$.name",
        ),
        (
            {
                "type": "object",
                "properties": {
                    "cfg": {
                        "type": "object",
                        "properties": {"n": {"type": "integer", "minimum": 10, "maximum": 5}},
                        "required": ["n"],
                    }
                },
                "required": ["cfg"],
            },
            "$.cfg.n",
        ),
        (
            {
                "type": "object",
                "properties": {"tags": {"type": "array", "minItems": 3, "maxItems": 1}},
                "required": ["tags"],
            },
            "$.tags",
        ),
        (
            {
                "type": "object",
                "properties": {"code": {"type": "string", "pattern": "^a$", "minLength": 3}},
                "required": ["code"],
            },
            "$.code",
        ),
        (
            {
                "type": "object",
                "properties": {
                    "n": {"type": "integer", "exclusiveMinimum": 1, "exclusiveMaximum": 2}
                },
                "required": ["n"],
            },
            "$.n",
        ),
        (
            {
                "type": "object",
                "properties": {
                    "n": {"type": "integer", "multipleOf": 10, "minimum": 1, "maximum": 9}
                },
                "required": ["n"],
            },
            "$.n",
        ),
        (
            {
                "type": "object",
                "properties": {"unit": {"type": "string", "enum": [1, 2]}},
                "required": ["unit"],
            },
            "$.unit",
        ),
        (
            {
                "type": "object",
                "properties": {
                    "flags": {
                        "type": "array",
                        "items": {"type": "boolean"},
                        "uniqueItems": True,
                        "minItems": 3,
                    }
                },
                "required": ["flags"],
            },
            "$.flags",
        ),
        (
            {
                "type": "object",
                "properties": {"x": {"$ref": "#/$defs/missing"}},
                "required": ["x"],
            },
            "$.x",
        ),
        (
            {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "required": ["a", "b"],
                "additionalProperties": False,
            },
            "$",
        ),
        (
            {  # every node requires another node: no finite value exists
                "$defs": {
                    "node": {
                        "type": "object",
                        "properties": {"next": {"$ref": "#/$defs/node"}},
                        "required": ["next"],
                    }
                },
                "type": "object",
                "properties": {"head": {"$ref": "#/$defs/node"}},
                "required": ["head"],
            },
            "$.head",
        ),
        (
            {
                "type": "object",
                "properties": {"x": {"allOf": [{"type": "string"}, {"type": "integer"}]}},
                "required": ["x"],
            },
            "$.x",
        ),
        (
            {
                "type": "object",
                "properties": {"id": {"type": "string", "maxLength": -1}},
                "required": ["id"],
            },
            "$.id",
        ),
    ],
)
def test_impossible_schema_raises_with_path(schema: dict[str, Any], path: str) -> None:
    for seed in range(3):
        with pytest.raises(UnsupportedSchema) as info:
            generate_arguments(schema, random.Random(seed))
        assert info.value.path.startswith(path), str(info.value)
        assert str(info.value).startswith(f"{path}"), str(info.value)


def test_unsupported_schema_is_a_value_error_with_clear_message() -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "minLength": 5, "maxLength": 2}},
        "required": ["name"],
    }
    with pytest.raises(
        ValueError, match=re.escape("$.name: minLength 5 is greater than maxLength 2")
    ):
        generate_arguments(schema, random.Random(0))


def test_non_identifier_property_names_are_quoted_in_paths() -> None:
    schema = {
        "type": "object",
        "properties": {"max-count": {"type": "integer", "minimum": 5, "maximum": 1}},
        "required": ["max-count"],
    }
    with pytest.raises(UnsupportedSchema, match=re.escape('$["max-count"]')):
        generate_arguments(schema, random.Random(0))


def test_optional_unsatisfiable_property_is_left_out() -> None:
    schema = {
        "type": "object",
        "properties": {
            "ok": {"type": "string"},
            "broken": {"type": "string", "minLength": 5, "maxLength": 2},
        },
        "required": ["ok"],
    }
    for seed in range(10):
        assert set(generate_arguments(schema, random.Random(seed))) == {"ok"}


def test_schema_is_not_modified() -> None:
    for name, schema in SCHEMAS.items():
        before = json.dumps(schema, sort_keys=True)
        for seed in range(5):
            generate_arguments(schema, random.Random(seed))
        assert json.dumps(schema, sort_keys=True) == before, name


def test_draft7_dependencies_and_tuple_items() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "b": {"type": "string"},
            "pair": {"type": "array", "items": [{"type": "string"}, {"type": "boolean"}]},
        },
        "required": ["a", "pair"],
        "dependencies": {"a": ["b"]},
        "dependentRequired": {"b": ["a"]},
    }
    before = json.dumps(schema, sort_keys=True)
    for seed in range(10):
        value = generate_arguments(schema, random.Random(seed))
        jsonschema.Draft7Validator(schema).validate(value)
        assert "b" in value
        assert isinstance(value["pair"][0], str)
    assert json.dumps(schema, sort_keys=True) == before
