from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

# A flat file name: no directories, no leading dot, a known extension.
DATASET_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,122}\.(safetensors|npy)$"


class TensorPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    name: str | None  # None for .npy (one unnamed array)
    dtype: str
    shape: list[int]


class DatasetPublic(BaseModel):
    # Read from a `services.data.datasets.DatasetInfo`: `DatasetPublic.model_validate(info)`.

    model_config = ConfigDict(from_attributes=True)

    name: str
    format: Literal["safetensors", "npy"]
    size_bytes: int
    tensors: list[TensorPublic]
    modified_at: datetime
