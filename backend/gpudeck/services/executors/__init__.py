"""Places to run jobs other than GPUDeck's own nodes (issue 35): the Slurm clusters an admin
connected (`clusters`: the registry, the client for one cluster, its nodes read safely).
Submitting to them, polling their jobs and sweeps as arrays come next (docs/slurm.md)."""
