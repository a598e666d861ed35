from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import AliasChoices, AliasPath, BaseModel, ConfigDict, Field

USER_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
TOKEN_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9 ._:-]{0,63}$"


class UserCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    name: str = Field(min_length=1, max_length=64, pattern=USER_NAME_PATTERN)
    role: Literal["user", "admin"] = "user"


class UserPublic(BaseModel):
    # Read from a `models.User` or a signed-in principal (its user_id): `model_validate(user)`.
    model_config = ConfigDict(from_attributes=True)

    id: int | None = Field(validation_alias=AliasChoices("id", "user_id"))
    name: str
    role: Literal["user", "admin"]
    run_code: bool = False  # may submit script jobs (admins always may)


class UserUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    run_code: bool = Field(description="may submit jobs that run their own code (script)")


class TokenCreate(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)

    name: str = Field(default="default", min_length=1, max_length=64, pattern=TOKEN_NAME_PATTERN)
    expires_in_days: int | None = Field(default=None, ge=1, le=3650)
    user: str | None = Field(
        default=None,
        min_length=1,
        max_length=64,
        pattern=USER_NAME_PATTERN,
        description="whose token (admins only; default: yourself)",
    )


class TokenPublic(BaseModel):
    """A token as listed: never the secret, only the first characters to tell tokens apart."""

    # Read from a `models.ApiToken`: `TokenPublic.model_validate(record)`.

    model_config = ConfigDict(from_attributes=True)

    id: int
    user: str = Field(validation_alias=AliasChoices(AliasPath("user", "name"), "user"))
    name: str
    display_prefix: str
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None
    revoked_at: datetime | None


class TokenCreated(TokenPublic):
    token: str = Field(description="shown once; store it now")


class UserCreated(BaseModel):
    user: UserPublic
    token: TokenCreated


class AuditEventPublic(BaseModel):
    id: int
    at: datetime
    actor: str
    action: str
    target: str | None
    detail: dict[str, Any]
    remote_addr: str | None


class AuditEventsPublic(BaseModel):
    items: list[AuditEventPublic]
    total: int
    limit: int
    offset: int


def token_created(record: Any, secret: str) -> TokenCreated:
    """A token just issued: the listing's fields and, this once, the secret."""
    return TokenCreated(**TokenPublic.model_validate(record).model_dump(), token=secret)
