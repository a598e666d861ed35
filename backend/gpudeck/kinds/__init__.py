"""Built-in job kinds, one folder each. Each is registered by its entry point in the
`gpudeck.job_kinds` group (backend/pyproject.toml), exactly as a third-party kind would be."""
