from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

USER_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$"
TOKEN_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9 ._:-]{0,63}$"


class UserCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=64, pattern=USER_NAME_PATTERN)
    role: Literal["user", "admin"] = "user"


class UserPublic(BaseModel):
    id: int | None
    name: str
    role: Literal["user", "admin"]


class TokenCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(default="default", min_length=1, max_length=64, pattern=TOKEN_NAME_PATTERN)
    expires_in_days: int | None = Field(default=None, ge=1, le=3650)


class TokenPublic(BaseModel):
    """A token as listed: never the secret, only the first characters to tell tokens apart."""

    id: int
    user: str
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


def _token_fields(record: Any) -> dict[str, Any]:
    return {
        "id": record.id,
        "user": record.user.name,
        "name": record.name,
        "display_prefix": record.display_prefix,
        "created_at": record.created_at,
        "expires_at": record.expires_at,
        "last_used_at": record.last_used_at,
        "revoked_at": record.revoked_at,
    }


def token_public(record: Any) -> TokenPublic:
    """A `models.ApiToken` as listed."""
    return TokenPublic(**_token_fields(record))


def token_created(record: Any, secret: str) -> TokenCreated:
    return TokenCreated(**_token_fields(record), token=secret)
