from __future__ import annotations

from pydantic import BaseModel


class ErrorDetail(BaseModel):
    """Body of every 4xx that is not a schema error: which field, why, and a machine code."""

    code: str
    field: str | None
    message: str


class ErrorResponse(BaseModel):
    detail: ErrorDetail
