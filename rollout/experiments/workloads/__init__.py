# The workloads the experiments run: named, seeded agent sessions (catalog; their tool schemas in
# tooldefs, their filler text in text), fleets of agents sharing one server (agents) and the
# published statistics of real sessions beside the same figures of a run (published).
