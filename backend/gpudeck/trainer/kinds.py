"""The job-kind registry: the only way a job names the code it runs.

A kind is a config model plus two references, resolved lazily so that validating a request
(in the API) never imports torch:

- `train`: "module:function" called in every rank as `train(ctx, config)` (ctx: TrainContext)
- `estimate_memory`: "module:function" called as `estimate_memory(config, world_size)`

Built-in kinds live here; others plug in through the `gpudeck.job_kinds` entry-point group,
each entry point naming a `JobKind`. No endpoint ever accepts a module path: requests name a
kind, and only registered kinds exist.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from importlib.metadata import entry_points
from typing import Any

from pydantic import BaseModel

from gpudeck.trainer.sae_config import SaeConfig

log = logging.getLogger(__name__)
ENTRY_POINT_GROUP = "gpudeck.job_kinds"
KIND_MODULES_ENV = "GPUDECK_KIND_MODULES"


@dataclass(frozen=True)
class JobKind:
    name: str
    description: str
    config_model: type[BaseModel]
    train: str
    estimate_memory: str | None = None
    # The global batch size field, if any: the API checks it divides evenly across ranks.
    batch_size_field: str | None = None

    def resolve_train(self) -> Callable[..., Any]:
        return _resolve(self.train)

    def resolve_estimate(self) -> Callable[..., Any] | None:
        return _resolve(self.estimate_memory) if self.estimate_memory else None


def _resolve(ref: str) -> Callable[..., Any]:
    module_name, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module_name), attr)  # type: ignore[no-any-return,unused-ignore]


SAE_KIND = JobKind(
    name="sae",
    description="Standard ReLU sparse autoencoder on activation vectors (SAELens-compatible)",
    config_model=SaeConfig,
    train="gpudeck.trainer.sae:train",
    estimate_memory="gpudeck.trainer.memory:estimate_sae",
    batch_size_field="batch_size",
)


@lru_cache
def registry() -> dict[str, JobKind]:
    kinds = {SAE_KIND.name: SAE_KIND}
    for entry_point in entry_points(group=ENTRY_POINT_GROUP):
        try:
            kind = entry_point.load()
        except Exception:  # a broken plug-in must not take the API down with it
            log.exception("job kind %r failed to load; it is not offered", entry_point.name)
            continue
        if not isinstance(kind, JobKind) or kind.name != entry_point.name:
            log.error(
                "entry point %r is not a JobKind named %r", entry_point.value, entry_point.name
            )
            continue
        kinds.setdefault(kind.name, kind)
    for kind in _kinds_from_modules(os.environ.get(KIND_MODULES_ENV, "")):
        kinds.setdefault(kind.name, kind)
    return kinds


def _kinds_from_modules(names: str) -> list[JobKind]:
    """Kinds named by the server setting GPUDECK_KIND_MODULES: comma-separated importable
    modules, each exposing `KIND: JobKind` (for kinds not packaged with an entry point).
    An operator's setting, read from the environment; never a request field."""
    found = []
    for name in filter(None, (n.strip() for n in names.split(","))):
        try:
            kind = getattr(importlib.import_module(name), "KIND", None)
        except Exception:
            log.exception("job kind module %r failed to import; it is not offered", name)
            continue
        if isinstance(kind, JobKind):
            found.append(kind)
        else:
            log.error("module %r has no KIND of type JobKind", name)
    return found


def get_kind(name: str) -> JobKind | None:
    return registry().get(name)
