# `rollout load`: many concurrent WebSocket rollouts against one server process (run, client)
# and the scaling run over several worker counts (scale).
