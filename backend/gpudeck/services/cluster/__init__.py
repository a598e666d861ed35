"""The cluster as the samplers report it: nodes joining and leaving, the device inventory,
telemetry read back, the sampler's database side, and the counts `/metrics` reports."""
