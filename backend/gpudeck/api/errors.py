"""The one place that turns domain errors into HTTP responses naming the field and the reason.

Services raise errors by category (errors.Invalid, NotFound, ...); the status code of each
category is decided here and nowhere else."""

from __future__ import annotations

import math
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from gpudeck.services.errors import (
    Conflict,
    DomainError,
    Forbidden,
    Invalid,
    NotAuthenticated,
    NotFound,
    TooLarge,
)

# Most specific first: NotAuthenticated is a Forbidden.
STATUS_BY_CATEGORY: tuple[tuple[type[DomainError], int], ...] = (
    (NotAuthenticated, 401),
    (Forbidden, 403),
    (NotFound, 404),
    (Conflict, 409),
    (TooLarge, 413),
    (Invalid, 422),
)


def status_for(exc: DomainError) -> int:
    return next((status for cls, status in STATUS_BY_CATEGORY if isinstance(exc, cls)), 400)


def _loc(field: str | None) -> list[str | int]:
    parts: list[str | int] = ["body"]
    for part in (field or "").split("."):
        if part:
            parts.append(int(part) if part.isascii() and part.isdigit() else part)
    return parts


async def domain_error_handler(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, DomainError)
    status = status_for(exc)
    if status == 422:
        # The same shape as FastAPI's schema errors, so clients parse one format.
        pairs = exc.extra.get("errors") or [(exc.field, exc.message)]
        detail: object = [
            {"loc": _loc(field), "msg": msg, "type": exc.code} for field, msg in pairs
        ]
    else:
        extra = {k: v for k, v in exc.extra.items() if k != "errors"}
        detail = {"code": exc.code, "field": exc.field, "message": exc.message, **extra}
    return JSONResponse(status_code=status, content={"detail": detail})


def json_safe(value: Any) -> Any:
    """`value` as a JSON document can hold it: NaN and the infinities, which Python's JSON
    parser accepts in a request body, become their names (the error echoes what was sent)."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value


async def request_validation_handler(_: Request, exc: Exception) -> JSONResponse:
    """FastAPI's own 422 for a body that fails its schema, rendered so that a non-finite input
    (`"count": NaN`) is answered 422 naming the field, not 500 from rendering the echo."""
    assert isinstance(exc, RequestValidationError)
    detail = [
        {**error, "msg": error["msg"].removeprefix("Value error, ")}
        for error in json_safe(jsonable_encoder(exc.errors()))
    ]
    return JSONResponse(status_code=422, content={"detail": detail})


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(DomainError, domain_error_handler)
    app.add_exception_handler(RequestValidationError, request_validation_handler)
