from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class DataChoicePublic(BaseModel):
    """One thing a form field may pick from the data directory, or a .py file under a code root
    (GET /api/choices/{source})."""

    model_config = ConfigDict(from_attributes=True)

    value: str  # what the field takes: the path under <data_dir>/models or <data_dir>/datasets
    size_bytes: int
    d_in: int | None  # a model's hidden size; a float [N, d_in] file's row width
    detail: str  # "gpt2 · 2 layers · hidden size 64", "activations [1000, 64] F32"
    root: str | None = None  # code_roots: the code root the file lies under
