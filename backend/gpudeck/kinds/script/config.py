"""A script job's config: what to run, with what, and how much memory it declares.

Only the shape is checked here; what depends on the server's settings (code roots,
interpreters, the environment allow-list) is checked by `checks.check_inputs` at submit and
again at launch."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    JsonValue,
    StringConstraints,
    model_validator,
)

GIB = 1024**3
_MODULE = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SIZE = re.compile(r"^\s*(?P<n>\d+(?:\.\d+)?)\s*(?P<unit>[KMGT]i?B|B)\s*$", re.IGNORECASE)
_UNIT_BYTES = {
    "b": 1, "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
}  # fmt: skip

Arg = Annotated[str, StringConstraints(max_length=4096)]


def read_size(value: object) -> object:
    """A size as text with its unit ('4 GiB', '512MiB', '1.5 GB') in bytes; anything else is
    left to the int check. The form shows memory so and the CLI's --config may write it so.
    Text without a unit ('16') is refused: a number of bytes is a number, as every kind's
    strict fields take it (tests/services/submit/test_checks.py)."""
    if not isinstance(value, str):
        return value
    match = _SIZE.match(value)
    if match is None:
        raise ValueError(
            f"{value!r} is not a size: a number of bytes, or text with a unit (4 GiB, 512 MiB)"
        )
    return round(float(match["n"]) * _UNIT_BYTES[match["unit"].lower()])


# Bytes, given as a number or as text with a unit; `x-unit` has the form show and take units.
Size = Annotated[int, BeforeValidator(read_size)]
_IN_BYTES: dict[str, JsonValue] = {"x-unit": "bytes"}


class ScriptConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    # Titles are the form's labels; the field's own name is shown beside a label that differs.
    entrypoint: str | None = Field(
        default=None,
        max_length=1024,
        title="entry point",
        description="a .py file under a code root (relative to a root, or absolute); "
        "give this or module",
        json_schema_extra={"x-choices": "code_roots"},
    )
    module: str | None = Field(
        default=None,
        max_length=256,
        pattern=_MODULE,
        title="module",
        description="run `-m module` from a code root instead of an entry point",
    )
    args: list[Arg] = Field(
        default_factory=list,
        max_length=512,
        title="arguments",
        description="arguments, each passed as is: never through a shell",
    )
    env: dict[str, Annotated[str, StringConstraints(max_length=4096)]] = Field(
        default_factory=dict,
        title="environment variables",
        description="names from the allow-list",
    )
    python: str = Field(
        default="default", max_length=64, title="interpreter", description="a configured one"
    )
    nproc_per_device: int = Field(default=1, ge=1, le=16, title="processes per device")
    memory_per_device_bytes: Size = Field(
        default=4 * GIB,
        ge=0,
        title="memory per device",
        description="declared peak memory per device, used for placement",
        json_schema_extra=_IN_BYTES,
    )
    max_restarts: int = Field(
        default=0, ge=0, le=10, title="restarts allowed", description="torchrun --max-restarts"
    )
    # the bound on the int itself, before the size is read, so the schema states its minimum
    host_memory_bytes: (
        Annotated[int, Field(ge=512 * 1024**2), BeforeValidator(read_size)] | None
    ) = Field(
        default=None,
        title="host memory",
        description="host memory for the job's ranks together on a node; past it the job "
        "fails naming the limit (default and maximum: the server's)",
        json_schema_extra=_IN_BYTES,
    )

    @model_validator(mode="after")
    def _one_target(self) -> ScriptConfig:
        if (self.entrypoint is None) == (self.module is None):
            raise ValueError("give exactly one of entrypoint and module")
        bad = [name for name in self.env if not _ENV_NAME.match(name)]
        if bad:
            raise ValueError(f"env: {bad[0]!r} is not an environment variable name")
        return self
