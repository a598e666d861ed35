"""Signing in, tokens, users (admin) and the audit trail (admin)."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, status

from gpudeck.api.deps import AdminUser, CurrentUser, SessionDep
from gpudeck.models import User
from gpudeck.schemas.common import ErrorResponse
from gpudeck.schemas.users import (
    AuditEventPublic,
    AuditEventsPublic,
    TokenCreate,
    TokenCreated,
    TokenPublic,
    UserCreate,
    UserCreated,
    UserPublic,
    token_created,
    token_public,
)
from gpudeck.services import audit
from gpudeck.services import users as user_service

router = APIRouter(prefix="/api", tags=["auth"])
_404: dict[int | str, dict[str, Any]] = {404: {"model": ErrorResponse}}


def _client(request: Request) -> str | None:
    return request.client.host if request.client else None


@router.get("/auth/me")
def me(user: CurrentUser) -> UserPublic:
    return UserPublic(id=user.user_id, name=user.name, role=user.role)


@router.post("/auth/sign-in")
def sign_in(user: CurrentUser, session: SessionDep, request: Request) -> UserPublic:
    """The dashboard calls this once with the token the user pasted: it checks the token and
    records the sign-in. Every later request carries the token itself."""
    audit.record(session, user, audit.SIGN_IN, remote_addr=_client(request))
    session.commit()
    return UserPublic(id=user.user_id, name=user.name, role=user.role)


@router.get("/auth/tokens")
def list_tokens(
    user: CurrentUser,
    session: SessionDep,
    all_users: Annotated[bool, Query(description="every user's tokens (admins)")] = False,
) -> list[TokenPublic]:
    owner = None if all_users and user.is_admin else user.user_id
    if owner is None and not user.is_admin:
        return []  # the local admin of GPUDECK_AUTH=off has no tokens of its own
    return [token_public(t) for t in user_service.list_tokens(session, owner)]


@router.post("/auth/tokens", status_code=status.HTTP_201_CREATED)
def create_token(body: TokenCreate, user: CurrentUser, session: SessionDep) -> TokenCreated:
    """A new token for yourself; the secret is in this response only."""
    if user.user_id is None:
        raise user_service.Forbidden("authentication is off; there is no user to give a token")
    owner = session.get(User, user.user_id)
    assert owner is not None
    expires = timedelta(days=body.expires_in_days) if body.expires_in_days else None
    issued = user_service.issue_token(session, owner, body.name, expires)
    audit.record(session, user, audit.TOKEN_CREATE, f"token:{issued.record.id}")
    session.commit()
    return token_created(issued.record, issued.secret)


@router.delete("/auth/tokens/{token_id}", responses=_404)
def revoke_token(
    token_id: Annotated[int, Path(ge=1, le=2**63 - 1)], user: CurrentUser, session: SessionDep
) -> TokenPublic:
    record = user_service.revoke_token(session, token_id, user)
    audit.record(session, user, audit.TOKEN_REVOKE, f"token:{token_id}")
    session.commit()
    return token_public(record)


@router.get("/users")
def list_users(_: AdminUser, session: SessionDep) -> list[UserPublic]:
    return [UserPublic(id=u.id, name=u.name, role=u.role) for u in user_service.list_users(session)]


@router.post(
    "/users",
    status_code=status.HTTP_201_CREATED,
    responses={409: {"model": ErrorResponse, "description": "the name is taken"}},
)
def create_user(body: UserCreate, admin: AdminUser, session: SessionDep) -> UserCreated:
    """A new user and their first token (shown once)."""
    new = user_service.create_user(session, body.name, body.role)
    issued = user_service.issue_token(session, new)
    audit.record(session, admin, audit.USER_CREATE, f"user:{new.name}", role=new.role)
    session.commit()
    return UserCreated(
        user=UserPublic(id=new.id, name=new.name, role=body.role),
        token=token_created(issued.record, issued.secret),
    )


@router.get("/audit")
def list_audit(
    _: AdminUser,
    session: SessionDep,
    action: Annotated[str | None, Query(max_length=32)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
) -> AuditEventsPublic:
    events, total = audit.list_events(session, action=action, limit=limit, offset=offset)
    return AuditEventsPublic(
        items=[AuditEventPublic.model_validate(e, from_attributes=True) for e in events],
        total=total,
        limit=limit,
        offset=offset,
    )
