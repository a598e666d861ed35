"""A job's run as its workers see it: claim, start, heartbeat, finish; a job across nodes; the
reaper of jobs whose worker went silent."""
