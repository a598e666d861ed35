"""The `map` kind's configuration: which function, from where, over which input, to where.

Only the shape is checked here; what depends on the server (its code roots) and on the files
is checked by `checks.check_inputs` at submit and again in every rank."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, JsonValue, field_validator

from gpudeck.engine.map.options import MapOptions

_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
FUNCTION_REF = re.compile(rf"^{_IDENT}(\.{_IDENT})*:{_IDENT}$")
_RELATIVE = r"^[A-Za-z0-9_][A-Za-z0-9_./-]*$"  # no leading '/' or '.'; '..' refused below


class MapFunctionConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    function: str = Field(
        min_length=3,
        max_length=256,
        description="module:function, importable from `code`; called as function(batch, ...)",
    )
    code: str | None = Field(
        default=None,
        max_length=1024,
        description="a directory or .py file under a code root (default: the first code root)",
    )
    input: str = Field(
        min_length=1,
        max_length=512,
        pattern=_RELATIVE,
        description="under <data_dir>/datasets: an array (.npy/.safetensors), .jsonl or directory",
        json_schema_extra={"x-choices": "datasets"},
    )
    tensor_name: str | None = Field(default=None, max_length=128)
    output: str = Field(
        min_length=1,
        max_length=512,
        pattern=_RELATIVE,
        description="output directory under <data_dir>/datasets",
    )
    kwargs: dict[str, JsonValue] = Field(
        default_factory=dict, description="keyword arguments passed to the function on each call"
    )
    map: MapOptions = Field(default_factory=MapOptions)

    @field_validator("function")
    @classmethod
    def _reference(cls, value: str) -> str:
        if not FUNCTION_REF.match(value):
            raise ValueError("must be module:function, e.g. mypkg.embed:run (no path, no call)")
        return value

    @field_validator("input", "output")
    @classmethod
    def _no_climbing(cls, value: str) -> str:
        if ".." in value.split("/"):
            raise ValueError("must stay inside its directory (no '..')")
        return value

    @property
    def module_name(self) -> str:
        return self.function.partition(":")[0]

    @property
    def function_name(self) -> str:
        return self.function.partition(":")[2]
