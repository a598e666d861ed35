"""Users and their API tokens, through the service: who a token signs in as and when it stops
(revoked, expired, a disabled user), how often its last use is written, who may revoke whose
token, the `run_code` grant, and the first admin of a fresh install made once, even by two
processes starting together."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.security import DISPLAY_PREFIX_CHARS, Principal, hash_token
from gpudeck.models import ApiToken
from gpudeck.services.accounts import users as user_service


def test_first_admin_only_once(db: Session) -> None:
    issued = user_service.ensure_first_admin(db)
    assert issued is not None and issued.record.user.role == "admin"
    assert user_service.ensure_first_admin(db) is None


def test_no_first_admin_once_any_user_exists(db: Session) -> None:
    user_service.create_user(db, "carol")  # e.g. created by `gpudeck users add` before a start
    assert user_service.ensure_first_admin(db) is None
    assert [u.name for u in user_service.list_users(db)] == ["carol"]


def test_two_starts_at_once_make_one_first_admin(
    session_factory: sessionmaker[Session],
) -> None:
    """The second start waits on the first's lock and then sees its admin (without the lock it
    would find no users, insert a second admin and fail on the name)."""
    results: list[object] = []
    first, second, watch = session_factory(), session_factory(), session_factory()

    def start_second() -> None:
        try:
            results.append(user_service.ensure_first_admin(second))
            second.commit()
        except Exception as exc:  # any failure: the assertion below names it
            results.append(exc)

    thread = threading.Thread(target=start_second)
    try:
        assert user_service.ensure_first_admin(first) is not None  # holds the lock, uncommitted
        second_pid = second.scalar(text("SELECT pg_backend_pid()"))  # before its thread uses it
        thread.start()
        waited = waits_for_advisory_lock(watch, second_pid)
    finally:
        first.commit()  # before any close: the second start may be waiting on this transaction
        thread.join(timeout=10)
        for session in (first, second, watch):
            session.close()
    assert waited, "the second start never waited for the first's lock"
    assert results == [None]
    with session_factory() as session:
        assert [(u.name, u.role) for u in user_service.list_users(session)] == [("admin", "admin")]


def waits_for_advisory_lock(watch: Session, pid: int) -> bool:
    """Whether the backend `pid` comes to wait for an advisory lock within ~5 s."""
    blocked = text(
        "SELECT count(*) FROM pg_locks WHERE pid = :pid AND locktype = 'advisory' AND NOT granted"
    )
    for _ in range(500):  # it waits within milliseconds of starting
        if watch.scalar(blocked, {"pid": pid}):
            return True
        watch.rollback()
        threading.Event().wait(0.01)
    return False


def test_a_second_user_of_a_name_is_refused_and_the_session_goes_on(db: Session) -> None:
    user_service.create_user(db, "carol")
    with pytest.raises(user_service.UserExists) as info:
        user_service.create_user(db, "carol", "admin")
    assert (info.value.field, info.value.code) == ("name", "user_exists")
    user_service.create_user(db, "dave")  # only the savepoint was rolled back
    db.commit()
    assert [(u.name, u.role) for u in user_service.list_users(db)] == [
        ("carol", "user"),
        ("dave", "user"),
    ]
    with pytest.raises(user_service.RecordNotFound, match="user 'erin' does not exist"):
        user_service.get_user(db, "erin")


def test_a_token_signs_in_as_its_user_and_only_its_hash_is_stored(db: Session) -> None:
    carol = user_service.create_user(db, "carol")
    issued = user_service.issue_token(db, carol, name="laptop")
    db.commit()
    stored = db.get(ApiToken, issued.record.id)
    assert stored is not None and stored.token_hash == hash_token(issued.secret)
    assert stored.display_prefix == issued.secret[:DISPLAY_PREFIX_CHARS]
    assert stored.expires_at is None  # no expiry unless asked
    principal = user_service.authenticate(db, issued.secret)
    assert principal == Principal(
        name="carol", role="user", user_id=carol.id, token_id=issued.record.id, run_code=False
    )
    assert user_service.authenticate(db, issued.secret + "x") is None  # not a token's shape
    other = user_service.issue_token(db, carol).secret
    db.execute(text("DELETE FROM api_tokens WHERE id <> :id"), {"id": issued.record.id})
    assert user_service.authenticate(db, other) is None  # well formed, but no such token


def test_expired_revoked_or_disabled_tokens_sign_in_as_nobody(db: Session) -> None:
    carol = user_service.create_user(db, "carol")
    soon = user_service.issue_token(db, carol, expires_in=timedelta(hours=1))
    expires_at = soon.record.expires_at
    assert expires_at is not None
    assert timedelta(minutes=59) < expires_at - datetime.now(UTC) <= timedelta(hours=1)
    assert user_service.authenticate(db, soon.secret) is not None
    db.execute(
        text("UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE id = :id"),
        {"id": soon.record.id},
    )
    assert user_service.authenticate(db, soon.secret) is None

    revoked = user_service.issue_token(db, carol)
    user_service.revoke_token(db, revoked.record.id, Principal("carol", "user", carol.id))
    assert user_service.authenticate(db, revoked.secret) is None

    live = user_service.issue_token(db, carol)
    db.execute(text("UPDATE users SET disabled_at = now() WHERE id = :id"), {"id": carol.id})
    assert user_service.authenticate(db, live.secret) is None


def last_used(db: Session, token_id: int) -> datetime | None:
    return db.scalar(text("SELECT last_used_at FROM api_tokens WHERE id = :id"), {"id": token_id})


def test_last_use_is_written_at_most_once_a_resolution(db: Session) -> None:
    carol = user_service.create_user(db, "carol")
    issued = user_service.issue_token(db, carol)
    db.commit()
    assert last_used(db, issued.record.id) is None
    user_service.authenticate(db, issued.secret)
    db.commit()
    first = last_used(db, issued.record.id)
    assert first is not None
    user_service.authenticate(db, issued.secret)  # within the resolution: no write
    db.commit()
    assert last_used(db, issued.record.id) == first
    older = datetime.now(UTC) - user_service.LAST_USED_RESOLUTION - timedelta(seconds=1)
    user_service.record_use(db, issued.record.id, older)
    db.commit()
    user_service.authenticate(db, issued.secret)  # past the resolution: written again
    db.commit()
    again = last_used(db, issued.record.id)
    assert again is not None and again > older + user_service.LAST_USED_RESOLUTION


def test_users_revoke_their_own_tokens_admins_anyones_and_twice_is_harmless(
    db: Session,
) -> None:
    carol = user_service.create_user(db, "carol")
    dave = user_service.create_user(db, "dave")
    carols = user_service.issue_token(db, carol).record
    daves = user_service.issue_token(db, dave).record
    as_carol = Principal("carol", "user", carol.id)
    with pytest.raises(user_service.RecordNotFound) as info:
        user_service.revoke_token(db, daves.id, as_carol)  # someone else's: as if missing
    assert info.value.field == "token_id"
    with pytest.raises(user_service.RecordNotFound):
        user_service.revoke_token(db, daves.id + carols.id + 1, as_carol)
    assert daves.revoked_at is None

    revoked_at = user_service.revoke_token(db, carols.id, as_carol).revoked_at
    assert revoked_at is not None
    assert user_service.revoke_token(db, carols.id, as_carol).revoked_at == revoked_at
    assert user_service.revoke_token(db, daves.id, Principal("root", "admin")).revoked_at
    assert [t.id for t in user_service.list_tokens(db, carol.id)] == [carols.id]
    assert [t.id for t in user_service.list_tokens(db, None)] == [carols.id, daves.id]


def test_run_code_is_granted_by_an_admin_and_read_with_the_token(db: Session) -> None:
    carol = user_service.create_user(db, "carol")
    secret = user_service.issue_token(db, carol).secret
    signed_in = user_service.authenticate(db, secret)
    assert signed_in is not None and not user_service.may_run_code(signed_in)
    assert user_service.set_run_code(db, "carol", True).run_code
    granted = user_service.authenticate(db, secret)
    assert granted is not None and granted.run_code and user_service.may_run_code(granted)
    user_service.set_run_code(db, "carol", False)
    revoked = user_service.authenticate(db, secret)
    assert revoked is not None and not user_service.may_run_code(revoked)
    assert user_service.may_run_code(Principal("root", "admin"))  # admins need no grant
    with pytest.raises(user_service.RecordNotFound):
        user_service.set_run_code(db, "erin", True)
