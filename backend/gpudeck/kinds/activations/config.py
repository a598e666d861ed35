"""The `activations` kind's configuration: which model, which inputs, which hook, where to.

The fields naming a model, token input, hook point and precision are types of their own, so a
kind that runs the same model at the same hook (sae_eval's loss recovered) declares them the
same way, with the same bounds and checks."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from gpudeck.engine.map.options import MapOptions

_RELATIVE = r"^[A-Za-z0-9_][A-Za-z0-9_./-]*$"  # no leading '/' or '.'; '..' refused by the reader


def _no_climbing(value: str) -> str:
    if ".." in value.split("/"):
        raise ValueError("must stay inside its directory (no '..')")
    return value


ModelDir = Annotated[
    str,
    Field(
        min_length=1,
        max_length=512,
        pattern=_RELATIVE,
        description="a save_pretrained directory under <data_dir>/models (never downloaded)",
        json_schema_extra={"x-choices": "models"},
    ),
    AfterValidator(_no_climbing),
]
TokenInput = Annotated[
    str,
    Field(
        min_length=1,
        max_length=512,
        pattern=r"^[A-Za-z0-9_][A-Za-z0-9_./-]*\.(npy|safetensors|jsonl)$",
        description="under <data_dir>/datasets: token ids [N, T] (.npy/.safetensors) or .jsonl",
        json_schema_extra={"x-choices": "datasets"},
    ),
    AfterValidator(_no_climbing),
]
HookPath = Annotated[
    str,
    Field(
        min_length=1,
        max_length=256,
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*$",
        description="module path, e.g. transformer.h.6",
    ),
]
HookIo = Literal["output", "input"]
ModelDtype = Literal["float32", "bfloat16", "float16"]


class ActivationsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    model: ModelDir
    input: TokenInput
    tensor_name: str | None = Field(default=None, max_length=128)
    text_field: str = Field(default="text", min_length=1, max_length=128)
    hook: HookPath
    hook_io: HookIo = "output"
    positions: Literal["all", "last"] = Field(
        default="all", description="every (non-padding) position, or the last token only"
    )
    context_length: int = Field(default=128, ge=1, le=1_048_576)
    dtype: ModelDtype = "float32"
    output: Annotated[
        str,
        Field(
            min_length=1,
            max_length=512,
            pattern=_RELATIVE,
            description="output directory under <data_dir>/datasets",
        ),
        AfterValidator(_no_climbing),
    ]
    map: MapOptions = Field(default_factory=MapOptions)
