"""Users and API tokens. Takes a Session, never commits."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import bindparam, func, select, text, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from gpudeck.core.security import (
    DISPLAY_PREFIX_CHARS,
    Principal,
    Role,
    hash_token,
    looks_like_token,
    new_token,
    token_matches,
)
from gpudeck.models import ApiToken, User
from gpudeck.services.errors import Conflict, NotFound

# Writing last_used_at on every request would turn every read into a write.
LAST_USED_RESOLUTION = timedelta(minutes=1)


class UserExists(Conflict):
    def __init__(self, name: str) -> None:
        super().__init__(message=f"user {name!r} already exists", field="name", code="user_exists")


class RecordNotFound(NotFound):
    def __init__(self, what: str, field: str) -> None:
        super().__init__(message=f"{what} does not exist", field=field, code="not_found")


@dataclass(frozen=True)
class IssuedToken:
    """A new token: `secret` exists only here, never in the database."""

    record: ApiToken
    secret: str


def create_user(session: Session, name: str, role: Role = "user") -> User:
    user = User(name=name, role=role)
    try:
        with session.begin_nested():
            session.add(user)
            session.flush()
    except IntegrityError:
        raise UserExists(name) from None
    return user


def set_run_code(session: Session, name: str, allowed: bool) -> User:
    """Grant or revoke the `run_code` permission (script jobs)."""
    user = get_user(session, name)
    user.run_code = allowed
    session.flush()
    return user


def may_run_code(principal: Principal) -> bool:
    """Admins may; a user only when an admin granted them `run_code` (read with the token)."""
    return principal.is_admin or principal.run_code


def get_user(session: Session, name: str) -> User:
    user = session.scalar(select(User).where(User.name == name))
    if user is None:
        raise RecordNotFound(f"user {name!r}", "name")
    return user


def list_users(session: Session) -> list[User]:
    return list(session.scalars(select(User).order_by(User.id)))


def count_users(session: Session) -> int:
    return session.scalar(select(func.count()).select_from(User)) or 0


def issue_token(
    session: Session, user: User, name: str = "default", expires_in: timedelta | None = None
) -> IssuedToken:
    secret = new_token()
    record = ApiToken(
        user_id=user.id,
        name=name,
        token_hash=hash_token(secret),
        display_prefix=secret[:DISPLAY_PREFIX_CHARS],
        expires_at=datetime.now(UTC) + expires_in if expires_in else None,
    )
    session.add(record)
    session.flush()
    session.refresh(record)
    return IssuedToken(record, secret)


def list_tokens(session: Session, user_id: int | None) -> list[ApiToken]:
    query = select(ApiToken).order_by(ApiToken.id)
    if user_id is not None:
        query = query.where(ApiToken.user_id == user_id)
    return list(session.scalars(query))


def revoke_token(session: Session, token_id: int, by: Principal) -> ApiToken:
    """Users revoke their own tokens; admins anyone's. Revoking twice is harmless."""
    record = session.get(ApiToken, token_id)
    if record is None or not (by.is_admin or record.user_id == by.user_id):
        # Someone else's token id is as unknown to a non-admin as a missing one.
        raise RecordNotFound(f"token {token_id}", "token_id")
    if record.revoked_at is None:
        record.revoked_at = datetime.now(UTC)
        session.flush()
    return record


# Every request runs this: columns, not ORM objects, in a statement built once (building the
# token and user instances, and the statement, cost more CPU than the query itself).
_TOKEN_LOOKUP = (
    select(
        ApiToken.id,
        ApiToken.token_hash,
        ApiToken.expires_at,
        ApiToken.last_used_at,
        ApiToken.revoked_at,
        User.id.label("user_id"),
        User.name,
        User.role,
        User.run_code,
        User.disabled_at,
    )
    .join(User, User.id == ApiToken.user_id)
    .where(ApiToken.token_hash == bindparam("token_hash"))
)


def authenticate(session: Session, secret: str) -> Principal | None:
    """The principal for a presented token, or None (unknown, revoked, expired, disabled)."""
    if not looks_like_token(secret):
        return None
    record = session.execute(_TOKEN_LOOKUP, {"token_hash": hash_token(secret)}).one_or_none()
    if record is None or not token_matches(secret, record.token_hash):
        return None
    now = datetime.now(UTC)
    if record.revoked_at is not None or record.disabled_at is not None:
        return None
    if record.expires_at is not None and record.expires_at <= now:
        return None
    if record.last_used_at is None or now - record.last_used_at > LAST_USED_RESOLUTION:
        record_use(session, record.id, now)
    role: Role = "admin" if record.role == "admin" else "user"
    return Principal(
        name=record.name,
        role=role,
        user_id=record.user_id,
        token_id=record.id,
        run_code=record.run_code,
    )


def record_use(session: Session, token_id: int, when: datetime) -> None:
    """A token's last use (authenticate writes it at most once a LAST_USED_RESOLUTION)."""
    session.execute(update(ApiToken).where(ApiToken.id == token_id).values(last_used_at=when))


def ensure_first_admin(session: Session, name: str = "admin") -> IssuedToken | None:
    """On a fresh install (no users at all): an admin and its first token. Else None."""
    session.execute(text("SELECT pg_advisory_xact_lock(hashtext('gpudeck.first_admin'))"))
    if count_users(session):
        return None
    return issue_token(session, create_user(session, name, "admin"), name="first-admin")
