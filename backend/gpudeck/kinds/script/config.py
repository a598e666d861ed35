"""A script job's config: what to run, with what, and how much memory it declares.

Only the shape is checked here; what depends on the server's settings (code roots,
interpreters, the environment allow-list) is checked by `checks.check_inputs` at submit and
again at launch."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

GIB = 1024**3
_MODULE = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

Arg = Annotated[str, StringConstraints(max_length=4096)]


class ScriptConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    entrypoint: str | None = Field(
        default=None,
        max_length=1024,
        description="a .py file under a code root (relative to a root, or absolute)",
    )
    module: str | None = Field(
        default=None, max_length=256, pattern=_MODULE, description="run `-m module` instead"
    )
    args: list[Arg] = Field(
        default_factory=list,
        max_length=512,
        description="arguments, each passed as is: never through a shell",
    )
    env: dict[str, Annotated[str, StringConstraints(max_length=4096)]] = Field(
        default_factory=dict, description="environment variables, names from the allow-list"
    )
    python: str = Field(default="default", max_length=64, description="a configured interpreter")
    nproc_per_device: int = Field(default=1, ge=1, le=16)
    memory_per_device_bytes: int = Field(
        default=4 * GIB, ge=0, description="declared peak memory per device, used for placement"
    )
    max_restarts: int = Field(default=0, ge=0, le=10, description="torchrun --max-restarts")
    host_memory_bytes: int | None = Field(
        default=None,
        ge=512 * 1024**2,
        description="host memory for the job's ranks together on a node; past it the job "
        "fails naming the limit (default and maximum: the server's)",
    )

    @model_validator(mode="after")
    def _one_target(self) -> ScriptConfig:
        if (self.entrypoint is None) == (self.module is None):
            raise ValueError("give exactly one of entrypoint and module")
        bad = [name for name in self.env if not _ENV_NAME.match(name)]
        if bad:
            raise ValueError(f"env: {bad[0]!r} is not an environment variable name")
        return self
