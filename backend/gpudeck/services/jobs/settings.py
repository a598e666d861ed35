"""A job's config read field by field: its value, the kind's default and whether it is that
default, what it comes to given the rest (the kind's `settings_notes`); a sweep member's
parameters against its sweep's base; the fields where several jobs differ.

Jobs store their config validated, defaults filled in (services/submit/checks.validate_config),
so "default" means the value equals the kind's default, typed or not."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from typing import Any, get_args

from pydantic import BaseModel, ValidationError
from pydantic_core import to_jsonable_python
from sqlalchemy.orm import Session

from gpudeck.engine.kinds import get_kind
from gpudeck.models import Job, Sweep
from gpudeck.schemas.settings import (
    DiffField,
    JobSettingsPublic,
    SettingPublic,
    SettingsDiffPublic,
    SweepDifference,
)
from gpudeck.services.jobs.lookup import get_job

log = logging.getLogger(__name__)
_MISSING = object()


def flatten(config: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Each leaf of a config by dotted path, in its order; lists are leaves."""
    for key, value in config.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            yield from flatten(value, f"{path}.")
        else:
            yield path, value


def _nested_model(model: type[BaseModel], name: str, value: Any) -> type[BaseModel] | None:
    """The model a dict value of field `name` holds (a union's member by its `type`), or None
    for a free-form mapping (a script's env, a map's kwargs)."""
    field = model.model_fields.get(name)
    if field is None or not isinstance(value, dict):
        return None
    for candidate in _models_of(field.annotation):
        type_field = candidate.model_fields.get("type")
        if type_field is None or type_field.default == value.get("type"):
            return candidate
    return None


def model_leaves(
    config: dict[str, Any], model: type[BaseModel] | None, prefix: str = ""
) -> Iterator[tuple[str, Any]]:
    """Each field of a config by dotted path, in the model's order, into nested models only:
    a free-form mapping is one value, so its keys are never taken for required fields."""
    if model is None:
        yield from flatten(config, prefix)
        return
    for name, value in in_model_order(config, model).items():
        nested = _nested_model(model, name, value)
        if nested is not None and value:
            yield from model_leaves(value, nested, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", value


def in_model_order(config: dict[str, Any], model: type[BaseModel] | None) -> dict[str, Any]:
    """The config with its keys in the model's field order, nested models' too: JSONB keeps an
    object's keys in an order of its own (shortest first), not the order a kind declares."""
    if model is None:
        return config
    fields = list(model.model_fields)
    ordered = {}
    for name in sorted(config, key=lambda k: fields.index(k) if k in fields else len(fields)):
        value = config[name]
        if isinstance(value, dict) and name in model.model_fields:
            candidates = _models_of(model.model_fields[name].annotation)
            chosen = [
                m
                for m in candidates
                if "type" not in m.model_fields
                or m.model_fields["type"].default == value.get("type")
            ]
            value = in_model_order(value, chosen[0] if chosen else None)
        ordered[name] = value
    return ordered


def _models_of(annotation: Any) -> list[type[BaseModel]]:
    """The config models a field may hold (one, or a union's members)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in get_args(annotation) for m in _models_of(arg)]


def _lookup(value: Any, parts: Sequence[str]) -> Any:
    for part in parts:
        if not isinstance(value, dict) or part not in value:
            return _MISSING
        value = value[part]
    return value


def default_of(model: type[BaseModel], path: str, config: dict[str, Any]) -> Any:
    """The model's default at a dotted path of `config`, or _MISSING where it has none. A nested
    model's own defaults count where the parent's default is another union member (a file
    dataset's tensor_name where the default dataset is synthetic)."""
    name, _, rest = path.partition(".")
    field = model.model_fields.get(name)
    if field is None:
        return _MISSING
    nested = config.get(name)
    if not field.is_required():
        default = to_jsonable_python(field.get_default(call_default_factory=True))
        if not rest:
            return default
        if rest == "type":  # a union's discriminator: the default's member is the default
            return _lookup(default, ["type"])
        # Read inside the default only where it is the same union member as the value.
        if _lookup(default, ["type"]) == _lookup(nested, ["type"]):
            found = _lookup(default, rest.split("."))
            if found is not _MISSING:
                return found
    if not rest or not isinstance(nested, dict):
        return _MISSING
    for candidate in _models_of(field.annotation):
        type_field = candidate.model_fields.get("type")
        if type_field is not None and type_field.default != nested.get("type"):
            continue
        found = default_of(candidate, rest, nested)
        if found is not _MISSING:
            return found
    return _MISSING


def _notes(kind_name: str, config: dict[str, Any]) -> dict[str, str]:
    kind = get_kind(kind_name)
    notes_fn = kind.resolve_settings_notes() if kind else None
    if kind is None or notes_fn is None:
        return {}
    try:
        model = kind.config_model.model_validate_json(json.dumps(config), strict=True)
    except ValidationError:
        # A config stored before its kind changed: show the values, without notes.
        log.warning("job config no longer validates for kind %s: no notes", kind_name)
        return {}
    return notes_fn(model)


def settings_of(kind_name: str, config: dict[str, Any]) -> list[SettingPublic]:
    """Every field of a config, each with its default and whether it is that default."""
    kind = get_kind(kind_name)
    notes = _notes(kind_name, config)
    rows = []
    for path, value in model_leaves(config, kind.config_model if kind else None):
        default = default_of(kind.config_model, path, config) if kind else _MISSING
        has_default = default is not _MISSING
        rows.append(
            SettingPublic(
                path=path,
                value=value,
                default=default if has_default else None,
                has_default=has_default,
                is_default=has_default and default == value,
                note=notes.get(path, ""),
            )
        )
    return rows


def sweep_differences(session: Session, job: Job) -> list[SweepDifference]:
    """A member's parameter values beside its sweep's base config (the kind's default where the
    base does not set the field)."""
    sweep = session.get(Sweep, job.sweep_id) if job.sweep_id else None
    if sweep is None or not job.sweep_params:
        return []
    base = sweep.spec.get("job", {}).get("config", {})
    kind = get_kind(job.kind)
    model = kind.config_model if kind else None
    order = {path: i for i, (path, _) in enumerate(flatten(in_model_order(job.config, model)))}
    rows = []
    for path, value in sorted(job.sweep_params.items(), key=lambda p: order.get(p[0], len(order))):
        found = _lookup(base, path.split("."))
        if found is _MISSING and kind is not None:
            found = default_of(kind.config_model, path, job.config)
        rows.append(
            SweepDifference(path=path, value=value, base=None if found is _MISSING else found)
        )
    return rows


def job_settings(session: Session, job_id: int) -> JobSettingsPublic:
    job = get_job(session, job_id)
    return JobSettingsPublic(
        job_id=job.id,
        kind=job.kind,
        settings=settings_of(job.kind, job.config),
        sweep_id=job.sweep_id,
        sweep_differences=sweep_differences(session, job),
    )


def diff_configs(configs: Sequence[dict[str, Any]]) -> tuple[list[DiffField], int]:
    """The fields where the configs differ (in order of first appearance), and how many agree."""
    flat = [dict(flatten(c)) for c in configs]
    paths = list(dict.fromkeys(p for f in flat for p in f))
    differing, same = [], 0
    for path in paths:
        present = [path in f for f in flat]
        values = [f.get(path) for f in flat]
        if all(present) and all(v == values[0] for v in values):
            same += 1
            continue
        differing.append(DiffField(path=path, values=values, present=present))
    return differing, same


def _ordered(job: Job) -> dict[str, Any]:
    kind = get_kind(job.kind)
    return in_model_order(job.config, kind.config_model if kind else None)


def jobs_diff(session: Session, job_ids: Sequence[int]) -> SettingsDiffPublic:
    jobs = [get_job(session, job_id) for job_id in job_ids]
    fields, same = diff_configs([_ordered(j) for j in jobs])
    return SettingsDiffPublic(
        job_ids=[j.id for j in jobs], kinds=[j.kind for j in jobs], fields=fields, same_count=same
    )
