# The harness of `rollout compare` and its sweeps: one rollout against a fresh server
# (compare), what it measures (results), the terminal output (report), child servers (procs)
# and the command's flag checking (cli).
