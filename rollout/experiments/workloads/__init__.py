# The workloads the experiments run: named, seeded agent sessions (catalog) and the published
# statistics of real sessions beside the same figures of a run (published).
