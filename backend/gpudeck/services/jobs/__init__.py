"""A job after its creation: the state machine (the one place its status changes), reading and
cancelling it, what its ranks report (events, checkpoints, rank logs, map progress)."""
