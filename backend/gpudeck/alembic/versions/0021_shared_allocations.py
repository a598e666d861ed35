"""shared allocations: a job may share a device by memory (issue 37). An allocation holds either
the whole device (reserved_bytes NULL, exclusive) or some bytes of it (shared); the database
decides, race-free, that a device holds one live exclusive allocation or only shared ones whose
bytes fit its usable memory. Jobs say how they run (share), nodes whether they let jobs share.

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-27 20:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The one usable-memory rule (services/placement/recommend.usable_when_idle), in SQL for the
# trigger: the device's memory less the safety margin of its size, max(512 MiB, 5 %).
# tests/services/placement/test_shared_allocations.py holds the two to the same figures.
CREATE_USABLE_FUNCTION = """
CREATE FUNCTION gpudeck_usable_when_idle(total_bytes bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$ SELECT total_bytes - greatest(536870912, total_bytes / 20) $$
"""

# Every live allocation is decided under its device row's lock (held until commit), so two
# transactions placing on one device go one after the other and the second reads what the
# first committed: no read-then-write race, whatever either read beforehand. Exclusive ones
# against each other stay the unique index's; this adds exclusive against shared, and the sum.
# SQLSTATE 23P01 (exclusion_violation); DETAIL is machine-readable for the service's message.
CREATE_CHECK_FUNCTION = """
CREATE FUNCTION gpudeck_check_allocation() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    total bigint;
    other bigint;
    taken bigint;
    room bigint;
BEGIN
    SELECT memory_total_bytes INTO total FROM devices
        WHERE node = NEW.node AND uuid = NEW.gpu_uuid FOR UPDATE;
    IF NEW.reserved_bytes IS NULL THEN
        SELECT job_id INTO other FROM allocations
            WHERE node = NEW.node AND gpu_uuid = NEW.gpu_uuid AND released_at IS NULL
              AND reserved_bytes IS NOT NULL AND id <> NEW.id
            LIMIT 1;
        IF other IS NOT NULL THEN
            RAISE EXCEPTION USING ERRCODE = 'exclusion_violation',
                MESSAGE = format('device %s %s is shared by job %s: it cannot be held whole',
                                 NEW.node, NEW.gpu_uuid, other),
                DETAIL = format('shared_by=%s', other);
        END IF;
        RETURN NEW;
    END IF;
    IF total IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'exclusion_violation',
            MESSAGE = format('device %s %s is not in the inventory: it cannot be shared',
                             NEW.node, NEW.gpu_uuid),
            DETAIL = 'unknown_device';
    END IF;
    SELECT job_id INTO other FROM allocations
        WHERE node = NEW.node AND gpu_uuid = NEW.gpu_uuid AND released_at IS NULL
          AND reserved_bytes IS NULL AND id <> NEW.id
        LIMIT 1;
    IF other IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'exclusion_violation',
            MESSAGE = format('device %s %s is held whole by job %s: it cannot be shared',
                             NEW.node, NEW.gpu_uuid, other),
            DETAIL = format('held_by=%s', other);
    END IF;
    SELECT coalesce(sum(reserved_bytes), 0) INTO taken FROM allocations
        WHERE node = NEW.node AND gpu_uuid = NEW.gpu_uuid AND released_at IS NULL
          AND reserved_bytes IS NOT NULL AND id <> NEW.id;
    room := gpudeck_usable_when_idle(total) - taken;
    IF NEW.reserved_bytes > room THEN
        RAISE EXCEPTION USING ERRCODE = 'exclusion_violation',
            MESSAGE = format('device %s %s has %s bytes free of reservations, %s needed',
                             NEW.node, NEW.gpu_uuid, room, NEW.reserved_bytes),
            DETAIL = format('room=%s node=%s uuid=%s', room, NEW.node, NEW.gpu_uuid);
    END IF;
    RETURN NEW;
END $$
"""

# Releases (released_at set) need no check: only a row that is or becomes live is judged.
CREATE_TRIGGER = """
CREATE TRIGGER tg_allocations_check BEFORE INSERT OR UPDATE OF node, gpu_uuid, reserved_bytes,
released_at ON allocations FOR EACH ROW WHEN (NEW.released_at IS NULL)
EXECUTE FUNCTION gpudeck_check_allocation()
"""


def upgrade() -> None:
    op.add_column("allocations", sa.Column("reserved_bytes", sa.BigInteger(), nullable=True))
    op.create_check_constraint(
        "ck_allocations_reserved_positive", "allocations", "reserved_bytes > 0"
    )
    # The unique index keeps exclusive allocations exactly as before; shared ones are the
    # trigger's.
    op.drop_index("uq_allocations_live_device", table_name="allocations")
    op.create_index(
        "uq_allocations_live_device",
        "allocations",
        ["node", "gpu_uuid"],
        unique=True,
        postgresql_where=sa.text("released_at IS NULL AND reserved_bytes IS NULL"),
    )
    op.add_column(
        "jobs", sa.Column("share", sa.String(16), server_default="exclusive", nullable=False)
    )
    op.create_check_constraint("ck_jobs_share", "jobs", "share IN ('exclusive', 'memory')")
    op.add_column("jobs", sa.Column("reserved_bytes_per_device", sa.BigInteger(), nullable=True))
    op.add_column(
        "nodes", sa.Column("share_memory", sa.Boolean(), server_default="false", nullable=False)
    )
    op.add_column(
        "nodes",
        sa.Column("share_across_users", sa.Boolean(), server_default="false", nullable=False),
    )
    op.execute(CREATE_USABLE_FUNCTION)
    op.execute(CREATE_CHECK_FUNCTION)
    op.execute(CREATE_TRIGGER)


def downgrade() -> None:
    op.execute("DROP TRIGGER tg_allocations_check ON allocations")
    op.execute("DROP FUNCTION gpudeck_check_allocation()")
    op.execute("DROP FUNCTION gpudeck_usable_when_idle(bigint)")
    op.drop_column("nodes", "share_across_users")
    op.drop_column("nodes", "share_memory")
    op.drop_column("jobs", "reserved_bytes_per_device")
    op.drop_constraint("ck_jobs_share", "jobs", type_="check")
    op.drop_column("jobs", "share")
    op.execute("DELETE FROM allocations WHERE reserved_bytes IS NOT NULL")
    op.drop_index("uq_allocations_live_device", table_name="allocations")
    op.create_index(
        "uq_allocations_live_device",
        "allocations",
        ["node", "gpu_uuid"],
        unique=True,
        postgresql_where=sa.text("released_at IS NULL"),
    )
    op.drop_constraint("ck_allocations_reserved_positive", "allocations", type_="check")
    op.drop_column("allocations", "reserved_bytes")
