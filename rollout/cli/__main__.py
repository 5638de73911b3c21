# `python -m rollout.cli ARGS`: the `rollout` command.
import sys

from rollout.cli.commands import main

sys.exit(main())
