"""The logic, grouped by what changes together; each group's `__init__` says what it holds.
Which group may use which: the `services-groups` contract in backend/pyproject.toml, drawn in
docs/architecture.md. A module that touches the database takes a Session and never commits (the
caller owns the transaction); the domain errors all groups raise are `errors.py`'s."""
