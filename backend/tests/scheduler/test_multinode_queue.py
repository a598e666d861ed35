"""A job across nodes in the queue, through the scheduler's real pass over Postgres and its real
dispatch to Redis: it waits like any other job (holding nothing), starts whole when its devices
free (never a part of it), on online nodes only, and a count spread over nodes takes the
fewest nodes. Its start is the submit path's: dispatched to every node's queue, claimed by its
first node, which opens its `job_nodes` rows."""

from __future__ import annotations

import pytest
import redis
from multinode_cases import on, placed, register_three_nodes, submit
from sqlalchemy import text
from sqlalchemy.orm import Session

from gpudeck.core.celery_app import node_queue
from gpudeck.models import Job, JobNode, JobStatus
from gpudeck.scheduler.duties import Context, schedule_queue
from gpudeck.services.jobs import cancel
from gpudeck.services.queue import actions as queue_actions
from gpudeck.services.queue import passes
from gpudeck.services.runs import lifecycle as runs


@pytest.fixture
def nodes(db: Session) -> None:
    register_three_nodes(db)


def end(db: Session, job: Job) -> None:
    """The holder ends (a placed job cancelled before it ran): its devices are freed."""
    cancel.cancel_job(db, job.id)
    db.commit()


def infos(ctx: Context, db: Session) -> dict[int, tuple[str, str]]:
    plan = passes.compute_plan(db, None, half_life_s=86400)
    db.rollback()
    return {i: (info.reason_code, info.reason) for i, info in plan.infos.items()}


def test_a_job_across_nodes_waits_for_a_busy_device_and_starts_whole_when_it_frees(
    scheduler: Context, db: Session, nodes: None, redis_client: redis.Redis
) -> None:
    holder = submit(db, devices=on(("beta", 1)))
    job = submit(db, devices=on(("alpha", 0), ("alpha", 1), ("beta", 1)))
    assert job.status == JobStatus.queued and placed(db, job.id) == []
    code, reason = infos(scheduler, db)[job.id]
    assert code == "devices_busy" and reason == f"devices busy: beta/1 held by job {holder.id}"

    assert schedule_queue(scheduler) == []  # alpha's two are free, beta/1 is not: nothing of it
    assert placed(db, job.id) == []
    end(db, holder)
    assert schedule_queue(scheduler) == [job.id]
    assert placed(db, job.id) == [(0, "alpha", 0), (1, "alpha", 1), (2, "beta", 1)]
    # The submit path's dispatch: once to each node's queue.
    assert redis_client.llen(node_queue("alpha")) == 1
    assert redis_client.llen(node_queue("beta")) == 1
    db.expire_all()
    assert db.get(Job, job.id).dispatched_at is not None  # type: ignore[union-attr]

    # ...and the submit path's launch: the first node claims it and opens each node's part.
    plan = runs.claim_job(db, job.id, "alpha")
    db.commit()
    assert plan is not None and (plan.nnodes, plan.total_world_size) == (2, 3)
    parts = db.query(JobNode).filter(JobNode.job_id == job.id).order_by(JobNode.node_rank).all()
    assert [(p.node, p.rank_offset, p.local_world_size) for p in parts] == [
        ("alpha", 0, 2),
        ("beta", 2, 1),
    ]


def test_a_count_over_nodes_waits_then_starts_on_the_fewest_nodes(
    scheduler: Context, db: Session, nodes: None, redis_client: redis.Redis
) -> None:
    blockers = [
        submit(db, devices=on(("alpha", 0), ("alpha", 1), ("beta", 0), ("beta", 1))),
        submit(db, devices=on(("gamma", 0), ("gamma", 1), ("gamma", 2), ("gamma", 3))),
    ]
    job = submit(db, count=4, nodes=2)  # 1 x 4 or 2 x 2: every device is held, it waits
    assert placed(db, job.id) == [] and job.node == "gamma"  # where it would go, idle
    code, reason = infos(scheduler, db)[job.id]
    assert code == "devices_busy" and "needs 1 x 4 or 2 x 2 (nodes x devices)" in reason
    for blocker in blockers:
        end(db, blocker)
    assert schedule_queue(scheduler) == [job.id]
    assert [n for _, n, _ in placed(db, job.id)] == ["gamma"] * 4  # one node, not two
    db.expire_all()
    assert db.get(Job, job.id).node == "gamma"  # type: ignore[union-attr]
    assert redis_client.llen(node_queue("gamma")) == 1


def test_a_count_over_nodes_never_starts_on_part_of_its_nodes(
    scheduler: Context, db: Session, nodes: None, redis_client: redis.Redis
) -> None:
    gamma = submit(db, devices=on(("gamma", 0), ("gamma", 1), ("gamma", 2), ("gamma", 3)))
    beta = submit(db, devices=on(("beta", 1)))
    job = submit(db, count=4, devices_per_node=2)  # alpha has 2 free, beta only 1
    assert placed(db, job.id) == []
    assert schedule_queue(scheduler) == [] and placed(db, job.id) == []
    assert redis_client.llen(node_queue("alpha")) == 0
    end(db, beta)
    assert schedule_queue(scheduler) == [job.id]
    assert placed(db, job.id) == [(0, "alpha", 0), (1, "alpha", 1), (2, "beta", 0), (3, "beta", 1)]
    assert placed(db, gamma.id)  # untouched


def test_offline_nodes_are_skipped(scheduler: Context, db: Session, nodes: None) -> None:
    busy = submit(db, devices=on(("alpha", 0), ("alpha", 1), ("beta", 0), ("beta", 1)))
    named = submit(db, devices=on(("alpha", 0), ("gamma", 0)))  # waits for alpha/0
    spread = submit(db, count=4, devices_per_node=2)
    silent = "UPDATE nodes SET last_seen_at = now() - interval '5 minutes' WHERE name = 'gamma'"
    db.execute(text(silent))
    db.commit()
    end(db, busy)
    # gamma has four free devices, but its sampler is silent: nothing starts there. The spread
    # job takes alpha and beta; the named one waits for gamma to report again.
    assert schedule_queue(scheduler) == [spread.id]
    assert {n for _, n, _ in placed(db, spread.id)} == {"alpha", "beta"}
    code, reason = infos(scheduler, db)[named.id]
    assert code == "devices_busy" and "gamma/0 offline" in reason
    assert placed(db, named.id) == []
    end(db, spread)
    assert schedule_queue(scheduler) == []  # alpha/0 free, gamma still offline: no part starts
    assert placed(db, named.id) == []
    db.execute(text("UPDATE nodes SET last_seen_at = now() WHERE name = 'gamma'"))
    db.commit()
    assert schedule_queue(scheduler) == [named.id]
    assert placed(db, named.id) == [(0, "alpha", 0), (1, "gamma", 0)]


def test_a_job_across_nodes_can_be_held_and_depend_on_another(
    scheduler: Context, db: Session, nodes: None
) -> None:
    first = submit(db, devices=on(("gamma", 0)))
    held = submit(db, devices=on(("alpha", 0), ("beta", 0)), hold=True)
    after = submit(db, count=2, devices_per_node=1, depends_on=[first.id])
    waits = infos(scheduler, db)
    assert waits[held.id][0] == "held" and waits[after.id][0] == "dependency"
    assert schedule_queue(scheduler) == []
    queue_actions.set_held(db, held.id, False)
    db.commit()
    assert schedule_queue(scheduler) == [held.id]
    # The dependency ends successfully: the dependent job starts at the next pass.
    db.execute(text("UPDATE jobs SET status = 'succeeded' WHERE id = :j"), {"j": first.id})
    db.commit()
    assert schedule_queue(scheduler) == [after.id]
    assert len({n for _, n, _ in placed(db, after.id)}) == 2


def test_a_count_over_nodes_preempts_a_lower_preemptible_job_then_starts_on_its_devices(
    scheduler: Context, db: Session, nodes: None
) -> None:
    """A plain count on a lab of several nodes (what the dashboard's count sends) is a spread
    over nodes: it stops a running preemptible job of lower priority when that lets it start,
    and starts on its devices once it has stopped, while that job waits to resume."""
    low = submit(db, devices=on(*(("gamma", i) for i in range(4))), preemptible=True, priority=-1)
    assert runs.claim_job(db, low.id, "gamma") is not None
    runs.mark_running(db, low.id)
    db.commit()
    submit(db, devices=on(("alpha", 0), ("alpha", 1), ("beta", 0), ("beta", 1)))  # not marked
    job = submit(db, count=4)
    assert schedule_queue(scheduler) == []
    db.expire_all()
    stopping = db.get(Job, low.id)
    assert stopping is not None and stopping.preempted_by_job_id == job.id
    assert stopping.preempt_requested_at is not None
    assert infos(scheduler, db)[job.id][0] == "preempting"
    assert runs.requeue_job(db, low.id) is not None  # its worker stopped it
    db.commit()
    assert schedule_queue(scheduler) == [job.id]
    assert [n for _, n, _ in placed(db, job.id)] == ["gamma"] * 4
    assert infos(scheduler, db)[low.id][0] == "devices_busy"  # it waits to resume
