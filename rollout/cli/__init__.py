# The `rollout` command line: `commands.py` runs each subcommand, `parser.py` declares every
# flag (with `compare_flags.py`, those of `rollout compare`, and `engine_flags.py`, serve's
# shared-engine ones). `python -m rollout.cli` and the `rollout` script both run `main`.
from rollout.cli.commands import api_keys, main, upstream_config

__all__ = ["api_keys", "main", "upstream_config"]
