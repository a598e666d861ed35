"""A job's settings (its config field by field, defaults marked) and the fields where jobs
differ: the job page's config panel, `gpudeck show` and `gpudeck diff` (docs/api.md)."""

from __future__ import annotations

from pydantic import BaseModel, Field, JsonValue

MAX_DIFF_JOBS = 20


class SettingPublic(BaseModel):
    path: str = Field(description="the config field, nested ones by dots", examples=["lr"])
    value: JsonValue
    default: JsonValue = Field(default=None, description="the kind's default, if it has one")
    has_default: bool = Field(description="false: the kind requires the field")
    is_default: bool = Field(description="the value is the kind's default")
    note: str = Field(
        default="",
        description="what the value comes to given the rest of the config (e.g. '75 steps')",
    )


class SweepDifference(BaseModel):
    """One parameter a sweep member sets, beside the value its sweep's base config gives."""

    path: str
    value: JsonValue
    base: JsonValue = Field(description="the sweep's base config (or the kind's default)")


class JobSettingsPublic(BaseModel):
    job_id: int
    kind: str
    settings: list[SettingPublic] = Field(description="every config field, in the kind's order")
    sweep_id: int | None = None
    sweep_differences: list[SweepDifference] = Field(
        default_factory=list, description="a sweep member's parameters against its base"
    )


class DiffField(BaseModel):
    path: str
    values: list[JsonValue] = Field(description="one per job, in the order asked (null: unset)")
    present: list[bool] = Field(description="whether each job's config has the field at all")


class SettingsDiffPublic(BaseModel):
    job_ids: list[int]
    kinds: list[str] = Field(description="each job's kind, in the order asked")
    fields: list[DiffField] = Field(description="only the fields whose values differ")
    same_count: int = Field(description="config fields every job sets to the same value")
