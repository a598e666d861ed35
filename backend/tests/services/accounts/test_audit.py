"""The audit trail: who did what is written as given (a principal by its name), a sweep's cancel
writes a row per member in one go, and the admin's listing pages newest first with the total of
what its filter matches, not of the page."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from gpudeck.core.security import Principal
from gpudeck.models import AuditEvent
from gpudeck.services.accounts import audit


def test_a_record_names_the_principal_and_keeps_the_detail_and_address(db: Session) -> None:
    carol = Principal(name="carol", role="user", user_id=7)
    event = audit.record(
        db, carol, audit.JOB_CANCEL, "job:12", remote_addr="10.1.2.3", reason="oom", steps=40
    )
    db.commit()
    assert event.id is not None  # flushed: the caller may name it before committing
    stored = db.scalars(select(AuditEvent)).one()
    assert (stored.actor, stored.action, stored.target) == ("carol", "job.cancel", "job:12")
    assert stored.detail == {"reason": "oom", "steps": 40}
    assert stored.remote_addr == "10.1.2.3" and stored.at is not None
    # A name given as text is the actor as it is (the scheduler, a CLI command).
    assert audit.record(db, "scheduler", audit.JOB_PRIORITY).actor == "scheduler"


def test_record_many_writes_one_row_per_target_as_record_would(db: Session) -> None:
    admin = Principal(name="root", role="admin")
    audit.record_many(db, admin, audit.JOB_CANCEL, ["job:3", "job:4", "job:5"], sweep_id=9)
    audit.record_many(db, admin, audit.JOB_CANCEL, [], sweep_id=10)  # nothing cancelled
    db.commit()
    rows = db.execute(
        select(AuditEvent.actor, AuditEvent.target, AuditEvent.detail).order_by(AuditEvent.id)
    ).all()
    assert [tuple(r) for r in rows] == [("root", f"job:{n}", {"sweep_id": 9}) for n in (3, 4, 5)]


def test_the_listing_is_newest_first_paged_and_counts_what_the_filter_matches(
    db: Session,
) -> None:
    for n in range(5):
        audit.record(db, "alice", audit.JOB_SUBMIT, f"job:{n}")
        audit.record(db, "alice", audit.SIGN_IN)
    db.commit()

    everything, total = audit.list_events(db, action=None, limit=100, offset=0)
    assert total == len(everything) == 10
    assert [e.id for e in everything] == sorted((e.id for e in everything), reverse=True)

    page, total = audit.list_events(db, action=audit.JOB_SUBMIT, limit=2, offset=1)
    assert total == 5  # the filter's total, not the page's
    assert [e.target for e in page] == ["job:3", "job:2"]
    past_the_end, total = audit.list_events(db, action=audit.JOB_SUBMIT, limit=2, offset=5)
    assert past_the_end == [] and total == 5
