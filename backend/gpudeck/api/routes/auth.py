"""Signing in, tokens, users (admin) and the audit trail (admin)."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request, status

from gpudeck.api.deps import AdminUser, CurrentUser, SessionDep
from gpudeck.models import User
from gpudeck.schemas.common import ErrorResponse
from gpudeck.schemas.users import (
    USER_NAME_PATTERN,
    AuditEventPublic,
    AuditEventsPublic,
    TokenCreate,
    TokenCreated,
    TokenPublic,
    UserCreate,
    UserCreated,
    UserPublic,
    UserUpdate,
    token_created,
)
from gpudeck.services.accounts import audit
from gpudeck.services.accounts import users as user_service
from gpudeck.services.errors import Forbidden

router = APIRouter(prefix="/api", tags=["auth"])
_404: dict[int | str, dict[str, Any]] = {404: {"model": ErrorResponse}}


def _client(request: Request) -> str | None:
    return request.client.host if request.client else None


@router.get("/auth/me")
def me(user: CurrentUser) -> UserPublic:
    return UserPublic.model_validate(user)


@router.post("/auth/sign-in")
def sign_in(user: CurrentUser, session: SessionDep, request: Request) -> UserPublic:
    """The dashboard calls this once with the token the user pasted: it checks the token and
    records the sign-in. Every later request carries the token itself."""
    audit.record(session, user, audit.SIGN_IN, remote_addr=_client(request))
    session.commit()
    return UserPublic.model_validate(user)


@router.get("/auth/tokens")
def list_tokens(
    user: CurrentUser,
    session: SessionDep,
    all_users: Annotated[bool, Query(description="every user's tokens (admins)")] = False,
) -> list[TokenPublic]:
    owner = None if all_users and user.is_admin else user.user_id
    if owner is None and not user.is_admin:
        return []  # the local admin of GPUDECK_AUTH=off has no tokens of its own
    return [TokenPublic.model_validate(t) for t in user_service.list_tokens(session, owner)]


@router.post("/auth/tokens", status_code=status.HTTP_201_CREATED)
def create_token(body: TokenCreate, user: CurrentUser, session: SessionDep) -> TokenCreated:
    """A new token for yourself (or, for an admin, for the user named in `user`); the secret is
    in this response only."""
    if body.user is not None and body.user != user.name:
        if not user.is_admin:
            raise Forbidden("only an admin makes tokens for other users", field="user")
        owner = user_service.get_user(session, body.user)
    elif user.user_id is None:
        raise Forbidden("authentication is off; there is no user to give a token")
    else:
        found = session.get(User, user.user_id)
        assert found is not None
        owner = found
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
    return TokenPublic.model_validate(record)


@router.get("/users")
def list_users(_: AdminUser, session: SessionDep) -> list[UserPublic]:
    return [UserPublic.model_validate(u) for u in user_service.list_users(session)]


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
        user=UserPublic.model_validate(new),
        token=token_created(issued.record, issued.secret),
    )


@router.patch(
    "/users/{name}",
    responses={404: {"model": ErrorResponse, "description": "no such user"}},
)
def update_user(
    name: Annotated[str, Path(min_length=1, max_length=64, pattern=USER_NAME_PATTERN)],
    body: UserUpdate,
    admin: AdminUser,
    session: SessionDep,
) -> UserPublic:
    """Grant or revoke `run_code` (submitting script jobs)."""
    user = user_service.set_run_code(session, name, body.run_code)
    audit.record(session, admin, audit.USER_UPDATE, f"user:{name}", run_code=body.run_code)
    session.commit()
    return UserPublic.model_validate(user)


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
