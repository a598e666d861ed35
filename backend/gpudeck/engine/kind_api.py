"""The kind API's version: what a third-party kind was written against, and which versions
this engine runs.

The rank context (engine.context.TrainContext) and the checkpoint reader are a public API:
kinds written by others call them. A change that breaks such a kind bumps KIND_API_VERSION,
adds a line to CHANGES (and to docs/kinds.md, "Changes between versions"), and keeps the old
call working for one version where that is cheap. A kind declares the version it was written
for (`JobKind.api_version`); the registry refuses one this engine does not run, with a reason
that names the kind, its version and what changed, so it fails at registration, listed as
unavailable, instead of in the middle of a run.

Torch-free: the registry (and so the API) reads it.
"""

from __future__ import annotations

KIND_API_VERSION = 2
# The current version and the one before it: a kind written for the previous version runs,
# its old calls answered by shims that write a warning into the job's log.
SUPPORTED_KIND_API_VERSIONS = (KIND_API_VERSION - 1, KIND_API_VERSION)
# A kind that declares no version was written before versions existed: the first one.
UNDECLARED_KIND_API_VERSION = 1

# What a kind written for version n - 1 must change to be written for n.
CHANGES: dict[int, str] = {
    2: (
        "a kind owns its checkpoint files: save_checkpoint(step, weights, cfg_json, "
        "state_tensors, state_json) became save_checkpoint(step, *, tensor_files, json_files), "
        "and checkpoint.load_checkpoint(path) became checkpoint.open_checkpoint(path) with "
        "read_tensors(name) / read_json(name)"
    ),
}


def _supported_text() -> str:
    low, high = SUPPORTED_KIND_API_VERSIONS[0], SUPPORTED_KIND_API_VERSIONS[-1]
    return f"this GPUDeck runs kind API versions {low} to {high}"


def refusal(name: str, version: object) -> str | None:
    """Why the kind `name`, written for kind API `version`, cannot run here; None if it can."""
    if isinstance(version, bool) or not isinstance(version, int):
        return f"kind {name!r}: api_version must be a whole number, not {version!r}"
    if version in SUPPORTED_KIND_API_VERSIONS:
        return None
    if version > KIND_API_VERSION:
        return (
            f"kind {name!r} is written for kind API version {version}, newer than this "
            f"GPUDeck's {KIND_API_VERSION}: upgrade GPUDeck, or install a release of the kind "
            f"written for version {KIND_API_VERSION}"
        )
    since = range(version + 1, KIND_API_VERSION + 1)
    changed = "; ".join(f"version {v}: {CHANGES[v]}" for v in since if v in CHANGES)
    return (
        f"kind {name!r} is written for kind API version {version}, no longer supported "
        f"({_supported_text()}); what changed since: {changed}"
    )
