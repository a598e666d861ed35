"""Which devices a job may have: the reservation insert (Postgres's unique index decides every
race), live free memory against the estimate (the one usable-memory rule,
`live_memory.usable`), recommendations, and what can never fit a node."""
