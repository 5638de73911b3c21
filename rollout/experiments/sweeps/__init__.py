# The sweeps of `rollout compare` beyond the mode table: per turn against history length
# (perturn), against chain length (chains) and a real agent CLI (codex).
