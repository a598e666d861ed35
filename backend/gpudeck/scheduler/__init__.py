"""`gpudeck scheduler`: the one active instance (Postgres advisory lock) that runs GPUDeck's
periodic duties outside the workers: today, reaping jobs whose worker is gone.

Any number may run (one per node, say); one holds the lock and works, the others stand by and
take over within a tick of the holder's death (Postgres drops a dead session's locks).
"""
