"""Sweeps: the members' parameters, creating a sweep through the submit pipeline, controlling
it after, and early stopping."""
