# `rollout bench`: the engine's limits, each a figure against its target (run), one bench a
# module.
