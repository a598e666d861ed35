"""The logic, grouped by what changes together; each group's `__init__` says what it holds.
Which group may use which: the `services-groups` contract in backend/pyproject.toml, drawn in
docs/architecture.md. Every module takes a Session and never commits; errors are `errors.py`'s."""
