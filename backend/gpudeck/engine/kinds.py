"""The job-kind contract and registry: the only way a job names the code it runs.

A kind is a folder with a `JobKind` and an entry point in the `gpudeck.job_kinds` group (the
built-in kinds are registered the same way, in gpudeck's own pyproject.toml; docs/kinds.md
tells a kind's author the whole contract). Everything
kind-specific that the API, services and dashboard need comes from here: the config model (its
JSON Schema renders the form), the memory estimate, the metric names and the charts. Code
references are "module:function" strings resolved lazily, so validating a request (in the API)
never imports torch:

- `train`: called in every rank as `train(ctx, config)` (ctx: engine.context.TrainContext)
- `estimate_memory`: called as `estimate_memory(config, world_size, device_type=...)` and
  returning a `MemoryEstimate`; `estimate_fields` names the config fields it reads, so that
  a sweep's members that differ only elsewhere (a learning rate, a seed) are estimated once
- `check_inputs`: optional, `check_inputs(config, data_dir)`, called at submit: raises
  `InputError` for inputs the job would only fail on at start (a dataset that is not there)
- `max_batch`: optional, `max_batch(config, world_size, bytes_free, *, safety_margin_bytes,
  device_type) -> int`, the largest global batch whose estimate fits
- `follow_up`: optional, `follow_up(config, data_dir) -> FollowUp | None`: the job that can
  work on this kind's output (a trainer on the activations an extraction wrote), prefilled
  from its config and what it wrote (the dashboard's follow-up button)
- `expectations`: optional, `expectations(config) -> list[Expectation]`: figures the job is
  expected to show, known from its config before it runs (a sparsity fixed by a config
  field); the form shows them
- `settings_notes`: optional, `settings_notes(config) -> dict[str, str]`: what a config field
  means once the rest of the config is known, by dotted path (a share of the run in steps,
  what an empty field stands for); the job page and `gpudeck show` print it beside the value
- `command`: optional, `command(launch) -> engine.command.CommandSpec`: the kind runs one
  program of its own (e.g. torchrun) instead of `train` in one rank process per device; the
  launcher starts it under a guard (engine/command.py) with the same cancel and fault rules

A kind declares the kind API version it is written for (`api_version`, engine/kind_api.py);
the registry refuses one this engine does not run, and keeps it, with the reason, in
`refused_kinds()` for the API and CLI to list as unavailable.

No endpoint ever accepts a module path: requests name a kind, and only registered kinds exist.
This module imports neither torch nor anything of the web side.
"""

from __future__ import annotations

import importlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from importlib.metadata import entry_points
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from gpudeck.engine import kind_api

log = logging.getLogger(__name__)
ENTRY_POINT_GROUP = "gpudeck.job_kinds"
KIND_MODULES_ENV = "GPUDECK_KIND_MODULES"
DeviceType = Literal["cuda", "cpu"]


class MemoryComponent(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    bytes: int
    note: str


class MemoryEstimate(BaseModel):
    """Peak memory of one rank; the `breakdown` adds up to `bytes_per_device`."""

    model_config = ConfigDict(frozen=True)

    bytes_per_device: int  # peak_step_bytes + framework reserve: compare with NVML free memory
    peak_step_bytes: int  # what torch.cuda.max_memory_allocated should report on the rank
    breakdown: list[MemoryComponent]
    method: str
    world_size: int
    per_rank_batch: int
    dtype: str
    device_type: DeviceType

    def bytes_by_component(self) -> dict[str, int]:
        return {c.name: c.bytes for c in self.breakdown}


class InputError(ValueError):
    """A kind's refusal of a config at submit: `field` is a path inside the config."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


@dataclass(frozen=True)
class FollowUp:
    """A job to run on another job's output: its kind, a label for the button, and the config
    fields the output decides (the rest keep the follow-up kind's defaults)."""

    kind: str
    label: str
    config: dict[str, Any]
    note: str = ""  # how a figure was found, when it is a guess the user should check
    # The follow-up's config field that takes the source job's id (a job that reads the
    # source's checkpoints, as an evaluation does); the service fills it in, and lists the
    # jobs whose field names a source as that source's follow-ups.
    source_field: str | None = None
    # False: it works on what the source has written so far (its checkpoints), so it waits
    # for no end and follows a source that failed or was cancelled too.
    needs_output: bool = True
    # The follow-up's default name, before " of job <source id>" (e.g. "eval"); empty: none.
    name: str = ""
    # The follow-up's config field taking one of the source's checkpoint steps (the form
    # offers the steps the source has written).
    checkpoint_field: str | None = None


@dataclass(frozen=True)
class Expectation:
    """A figure a job should show, read from its config alone (a sparsity its config fixes)."""

    label: str
    value: str
    note: str = ""
    # The config is known to train badly (dense, or many dead latents): the note says what to
    # change, and the form shows it as a warning before launch.
    warning: bool = False


@dataclass(frozen=True)
class Series:
    metric: str  # a key of the metrics the kind reports with ctx.report
    label: str
    # A config field that turns this figure on (an evaluation's optional measure): where the
    # job's config has it off (absent, null, false or type "off"), the job page says "not
    # measured: turn on <field>" instead of a dash that reads as a failure.
    needs: str = ""
    # A metric holding the steps this figure is counted over (a count over the last 1,000
    # steps, or fewer on a shorter run), shown beside its value.
    window_metric: str = ""


@dataclass(frozen=True)
class Chart:
    """One chart on the job page: the named metrics against the step (or, as bars, their
    latest values)."""

    title: str
    series: tuple[Series, ...]
    log_y: bool = False
    # "line": each series against the step; "bars": one bar per series, its latest value,
    # labelled by the series' label (a histogram whose bins the series are).
    style: Literal["line", "bars"] = "line"
    # The x axis's title where the step is not it (a histogram's bins: what they measure).
    x_label: str = ""


@dataclass(frozen=True)
class JobKind:
    name: str
    description: str
    config_model: type[BaseModel]
    train: str
    estimate_memory: str | None = None
    # The config fields (dotted paths) the estimate reads; None: all of them. A submission
    # estimates each distinct projection of its members' configs on these once
    # (services/submit/estimates.py): list every field that can change memory, and only those.
    estimate_fields: tuple[str, ...] | None = None
    check_inputs: str | None = None
    max_batch: str | None = None
    # The global batch size field, if any: the API checks it divides evenly across ranks.
    batch_size_field: str | None = None
    # The config field holding the number of steps: the job's progress total.
    steps_field: str | None = None
    charts: tuple[Chart, ...] = ()
    # Metrics shown as the job's latest figures (the first is its headline, e.g. the loss).
    summary_metrics: tuple[Series, ...] = ()
    # Estimate the default config when the API starts, so the first form is answered at once.
    warm_estimate: bool = field(default=False)
    # What a resumed job continues from: the source job's newest checkpoint, or the output it
    # already wrote (a map job skips the chunks on disk, so it needs no checkpoint at all).
    resumes_from: Literal["checkpoint", "output"] = "checkpoint"
    # "module:function" building the command the kind runs (see `command` above); None: `train`.
    command: str | None = None
    # The kind runs code the user wrote: only users holding the `run_code` permission submit it.
    runs_user_code: bool = False
    # "module:function" describing the job that can follow on this kind's output (see above).
    follow_up: str | None = None
    # "module:function" giving the figures the job should show (see `expectations` above).
    expectations: str | None = None
    # "module:function" giving what config fields resolve to (see `settings_notes` above).
    settings_notes: str | None = None
    # The config field naming another job whose checkpoints or output this one reads (an
    # evaluation's source): the submitter must own that job or be an admin, as for its figures.
    reads_job_field: str | None = None
    # The kind API version the kind is written for (engine/kind_api.py, docs/kinds.md). One that
    # says none was written before versions existed: version 1, whose calls still run (with a
    # warning in the job's log) but go when version 3 comes; declare the version you wrote for.
    api_version: int = kind_api.UNDECLARED_KIND_API_VERSION

    def resolve_train(self) -> Callable[..., Any]:
        return _resolve(self.train)

    def resolve_estimate(self) -> Callable[..., MemoryEstimate] | None:
        return _resolve(self.estimate_memory) if self.estimate_memory else None

    def resolve_check_inputs(self) -> Callable[..., None] | None:
        return _resolve(self.check_inputs) if self.check_inputs else None

    def resolve_max_batch(self) -> Callable[..., int] | None:
        return _resolve(self.max_batch) if self.max_batch else None

    def resolve_command(self) -> Callable[..., Any] | None:
        return _resolve(self.command) if self.command else None

    def resolve_follow_up(self) -> Callable[..., FollowUp | None] | None:
        return _resolve(self.follow_up) if self.follow_up else None

    def resolve_expectations(self) -> Callable[..., list[Expectation]] | None:
        return _resolve(self.expectations) if self.expectations else None

    def resolve_settings_notes(self) -> Callable[..., dict[str, str]] | None:
        return _resolve(self.settings_notes) if self.settings_notes else None


def _resolve(ref: str) -> Callable[..., Any]:
    module_name, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module_name), attr)  # type: ignore[no-any-return,unused-ignore]


@dataclass(frozen=True)
class RefusedKind:
    """A kind that loaded but that this engine does not run (its kind API version), kept so
    the API and CLI list it as unavailable, with why, instead of leaving it out unexplained."""

    kind: JobKind
    reason: str


_refused: dict[str, RefusedKind] = {}  # filled by each (re)load of registry()


@lru_cache
def registry() -> dict[str, JobKind]:
    """The kinds this engine runs, by name (the first registration of a name wins). A kind
    written for a kind API version it does not run is refused here: see refused_kinds()."""
    global _refused
    kinds: dict[str, JobKind] = {}
    refused: dict[str, RefusedKind] = {}
    found = _kinds_from_entry_points()
    found += _kinds_from_modules(os.environ.get(KIND_MODULES_ENV, ""))
    for kind in found:
        if kind.name in kinds or kind.name in refused:
            continue
        reason = kind_api.refusal(kind.name, kind.api_version)
        if reason is None:
            kinds[kind.name] = kind
        else:
            log.error("job kind refused: %s", reason)
            refused[kind.name] = RefusedKind(kind, reason)
    _refused = refused
    return kinds


def refused_kinds() -> dict[str, RefusedKind]:
    """The kinds the registry refused, by name, each with its reason."""
    registry()  # loads (or reloads after cache_clear), setting what was refused
    return dict(_refused)


def _kinds_from_entry_points() -> list[JobKind]:
    found = []
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
        found.append(kind)
    return found


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


def resumes_from_checkpoint(name: str) -> bool:
    """Whether resuming a job of this kind needs a checkpoint (an unknown kind: assume so)."""
    kind = get_kind(name)
    return kind is None or kind.resumes_from == "checkpoint"
