"""The scheduler's queue: the pure pass (`plan/`), the database read into it (`waiting`,
`snapshot`), one pass run and applied (`passes`), where a new job stands (`summary`),
what users do to waiting jobs (`actions`), and the hand-off to a node's worker (`dispatch`)."""
