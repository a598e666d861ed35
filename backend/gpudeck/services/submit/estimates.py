"""A job's memory estimate through its kind, and one submission's memo of them.

A sweep estimates each of its members. Members that agree on what the kind's estimate reads
(`JobKind.estimate_fields`, or the whole config for a kind that declares none) get one call
between them, so a sweep over a learning rate or a seed costs one estimate whatever the kind:
no trace of the `sae` kind, no checkpoint read of `sae_eval` per member. Each kind may cache
across submissions too (the `sae` kind keeps its traces by what changes memory).
"""

from __future__ import annotations

import json
from typing import Any

from gpudeck.engine.kinds import JobKind, get_kind

# One submission's estimates: (kind, world size, the config as the estimate reads it) -> bytes.
EstimateMemo = dict[tuple[str, int, str], int | None]


def estimate_bytes_per_device(
    kind_name: str, config: dict[str, Any], world_size: int, memo: EstimateMemo | None = None
) -> int | None:
    """The kind's memory estimate for a CUDA device (simulated devices stand for GPUs too);
    None for kinds without one. `config` is validated (services.submit.checks.validate_config); with
    `memo`, a config that reads the same as one already estimated is not estimated again."""
    kind = get_kind(kind_name)
    estimate = kind.resolve_estimate() if kind else None
    if kind is None or estimate is None:
        return None
    if memo is None:
        return int(estimate(kind.config_model.model_validate(config), world_size).bytes_per_device)
    key = (kind_name, world_size, estimate_view(kind, config))
    if key not in memo:
        memo[key] = estimate_bytes_per_device(kind_name, config, world_size)
    return memo[key]


def estimate_view(kind: JobKind, config: dict[str, Any]) -> str:
    """The config as the kind's estimate reads it, as a key: the declared fields (a missing
    one, under another variant of a union, reads as absent), else all of the config."""
    if kind.estimate_fields is None:
        return json.dumps(config, sort_keys=True)
    return json.dumps([_at(config, path) for path in kind.estimate_fields], sort_keys=True)


def _at(config: dict[str, Any], path: str) -> list[Any]:
    node: Any = config
    for name in path.split("."):
        if not isinstance(node, dict) or name not in node:
            return []
        node = node[name]
    return [node]
