# Owns: the public face of the tool-argument generator: `generate_arguments` makes up a
# function call's `arguments` valid for the tool's `parameters` JSON Schema, within `Limits`.
# The work lives in the modules beside this one (generate.py is the entry point); this file
# only re-exports.
from rollout.model.args.budget import (
    DEFAULT_LIMITS,
    Budget,
    LimitExceeded,
    Limits,
    UnsupportedSchema,
)
from rollout.model.args.generate import generate_arguments

__all__ = [
    "DEFAULT_LIMITS",
    "Budget",
    "LimitExceeded",
    "Limits",
    "UnsupportedSchema",
    "generate_arguments",
]
