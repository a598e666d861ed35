"""The `activations` kind's configuration: which model, which inputs, which hook, where to."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from gpudeck.engine.map.options import MapOptions

_RELATIVE = r"^[A-Za-z0-9_][A-Za-z0-9_./-]*$"  # no leading '/' or '.'; '..' refused by the reader


class ActivationsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    model: str = Field(
        min_length=1,
        max_length=512,
        pattern=_RELATIVE,
        description="a save_pretrained directory under <data_dir>/models (never downloaded)",
        json_schema_extra={"x-choices": "models"},
    )
    input: str = Field(
        min_length=1,
        max_length=512,
        pattern=r"^[A-Za-z0-9_][A-Za-z0-9_./-]*\.(npy|safetensors|jsonl)$",
        description="under <data_dir>/datasets: token ids [N, T] (.npy/.safetensors) or .jsonl",
        json_schema_extra={"x-choices": "datasets"},
    )
    tensor_name: str | None = Field(default=None, max_length=128)
    text_field: str = Field(default="text", min_length=1, max_length=128)
    hook: str = Field(
        min_length=1,
        max_length=256,
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*$",
        description="module path, e.g. transformer.h.6",
    )
    hook_io: Literal["output", "input"] = "output"
    positions: Literal["all", "last"] = Field(
        default="all", description="every (non-padding) position, or the last token only"
    )
    context_length: int = Field(default=128, ge=1, le=1_048_576)
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    output: str = Field(
        min_length=1,
        max_length=512,
        pattern=_RELATIVE,
        description="output directory under <data_dir>/datasets",
    )
    map: MapOptions = Field(default_factory=MapOptions)

    @field_validator("model", "input", "output")
    @classmethod
    def _no_climbing(cls, value: str) -> str:
        if ".." in value.split("/"):
            raise ValueError("must stay inside its directory (no '..')")
        return value
