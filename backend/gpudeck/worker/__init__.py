"""The node's worker runtime: runs jobs' ranks, relays their events, heartbeats, reaps."""
