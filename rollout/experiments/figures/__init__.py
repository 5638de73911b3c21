# The figures (matplotlib, the optional `plot` extra) of `rollout compare` and its sweeps.
