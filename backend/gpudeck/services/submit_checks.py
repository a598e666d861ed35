"""Checks a job must pass at submit, beyond its schema: what would otherwise fail later, at
start (a missing dataset), in Postgres (a NUL character) or by exhausting the machine (CPU
ranks past its memory). Each refusal names the field."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from gpudeck.engine.kinds import InputError, JobKind
from gpudeck.services.errors import Conflict, InvalidInput
from gpudeck.services.nodes import NodeFacts


def refuse_nul(value: Any, field: str) -> None:
    """Postgres text and JSONB cannot hold U+0000: a 422 naming the field, not a 500."""
    if isinstance(value, str):
        if "\x00" in value:
            raise InvalidInput([(field, "contains a NUL character (U+0000)")])
    elif isinstance(value, dict):
        for key, item in value.items():
            refuse_nul(key, f"{field}.{key}" if "\x00" not in str(key) else field)
            refuse_nul(item, f"{field}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            refuse_nul(item, f"{field}.{i}")


def refuse_non_finite(value: Any, field: str) -> None:
    """NaN and the infinities are no number a job takes, and JSON (so JSONB) cannot hold them:
    a 422 naming the field, wherever in the config they sit (a map job's kwargs too)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise InvalidInput([(field, f"must be a finite number, not {value!r}")])
    if isinstance(value, dict):
        for key, item in value.items():
            refuse_non_finite(item, f"{field}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            refuse_non_finite(item, f"{field}.{i}")


def check_kind_inputs(kind: JobKind, config: BaseModel, data_dir: Path) -> None:
    """The kind's own submit-time check (a dataset that must exist, ...), as a 422."""
    check = kind.resolve_check_inputs()
    if check is None:
        return
    try:
        check(config, data_dir)
    except InputError as exc:
        raise InvalidInput([(f"config.{exc.field}", exc.reason)]) from None


class InsufficientHostMemory(Conflict):
    def __init__(self, field: str, world_size: int, bytes_per_device: int, host_bytes: int) -> None:
        gib = 1024**3
        super().__init__(
            message=(
                f"{world_size} ranks x {bytes_per_device / gib:.2f} GiB = "
                f"{world_size * bytes_per_device / gib:.2f} GiB exceeds this machine's "
                f"{host_bytes / gib:.2f} GiB of memory (simulated devices run on the CPU; "
                "force does not lift this)"
            ),
            field=field,
            code="insufficient_host_memory",
            extra={
                "world_size": world_size,
                "bytes_per_device": bytes_per_device,
                "host_memory_bytes": host_bytes,
            },
        )


def check_host_memory(
    node: NodeFacts | None, world_size: int, bytes_per_device: int | None, field: str
) -> None:
    """Ranks on simulated devices are CPU processes of one machine: together they must fit in
    its memory, whatever `force` says (force skips the free-memory check, not physics).
    Simulated nodes run beside the API (gpudeck run), so this machine's memory is theirs."""
    if bytes_per_device is None or node is None or node.source != "simulated":
        return
    host_bytes = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if world_size * bytes_per_device > host_bytes:
        raise InsufficientHostMemory(field, world_size, bytes_per_device, host_bytes)
