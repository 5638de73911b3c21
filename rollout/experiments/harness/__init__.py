# The harness of `rollout compare` and its sweeps: one rollout against a fresh server (run),
# the experiment and its summaries (compare), the worker processes that run rollouts side by
# side (worker), the verdict, the terminal output (report) and child servers (procs).
