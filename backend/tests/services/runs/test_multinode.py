"""A job across nodes, without processes: placement, each node's claim, the end and the reaper."""

from __future__ import annotations

import time

import pytest
import redis
from harness import register_devices
from pydantic import ValidationError
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.config import Settings
from gpudeck.engine.launch import Launcher
from gpudeck.models import Job, JobStatus
from gpudeck.schemas.jobs import JobCreate
from gpudeck.services.cluster.inventory import list_nodes
from gpudeck.services.cluster.nodes import NodeOffline
from gpudeck.services.cluster.telemetry import device_views
from gpudeck.services.errors import Conflict, GpuBusy
from gpudeck.services.queue import passes
from gpudeck.services.runs import lifecycle as runs
from gpudeck.services.runs import multinode
from gpudeck.services.runs.multinode import Part
from gpudeck.services.runs.reaper import reap_lost
from gpudeck.services.submit import submission
from gpudeck.worker.runtime import WorkerRuntime

CONFIG = {"steps": 10, "batch_size": 64}


@pytest.fixture
def two_nodes(db: Session) -> None:
    register_devices(db, "2x80GiB", node="alpha")
    register_devices(db, "2x80GiB", node="beta")


def across(db: Session, refs: list[tuple[str, int]], **extra: object) -> Job:
    devices = [{"node": node, "index": index} for node, index in refs]
    spec = JobCreate.model_validate({"kind": "sae", "config": CONFIG, "devices": devices, **extra})
    job = submission.create_job(db, spec, owner="tester")
    db.commit()
    return job


def test_layout_groups_contiguous_ranks_per_node_and_refuses_interleaving() -> None:
    assert multinode.layout(["a", "a", "b"]) == [Part("a", 0, 0, 2), Part("b", 1, 2, 1)]
    with pytest.raises(ValueError, match="not contiguous"):
        multinode.layout(["a", "b", "a"])


def test_ranks_go_node_by_node_from_the_first_node_named(db: Session, two_nodes: None) -> None:
    job = across(db, [("beta", 1), ("alpha", 0), ("beta", 0), ("alpha", 1)])
    assert job.node == "beta"
    placed = [(a.rank, a.node, a.gpu_index) for a in job.allocations]
    assert placed == [(0, "beta", 1), (1, "beta", 0), (2, "alpha", 0), (3, "alpha", 1)]


def test_a_busy_device_on_another_node_refuses_the_whole_job_when_it_may_not_wait(
    db: Session, two_nodes: None
) -> None:
    holder = across(db, [("beta", 1)])
    with pytest.raises(GpuBusy) as info:
        across(db, [("alpha", 0), ("beta", 1)], queue=False)
    db.rollback()
    busy = info.value.extra["busy"]
    assert [(b["node"], b["index"], b["held_by_job_id"]) for b in busy] == [("beta", 1, holder.id)]
    held = db.scalar(text("SELECT count(*) FROM allocations WHERE released_at IS NULL"))
    assert held == 1  # nothing of the refused job was reserved on alpha


def test_a_job_across_nodes_behind_a_busy_device_waits_holding_nothing(
    db: Session, two_nodes: None
) -> None:
    across(db, [("beta", 1)])
    job = across(db, [("alpha", 0), ("beta", 1)])
    assert job.status == JobStatus.queued and job.allocations == []
    assert job.requested_nodes == ["alpha", "beta"] and len(job.requested_devices or []) == 2
    held = across(db, [("alpha", 1), ("beta", 0)], hold=True)  # free, but held: it waits
    assert held.allocations == [] and held.held
    live = "SELECT count(*) FROM allocations WHERE released_at IS NULL"
    assert db.scalar(text(live)) == 1  # only the first job's device


def claimed(db: Session, job: Job) -> tuple[runs.LaunchPlan, runs.LaunchPlan]:
    """The first node claims and publishes; the second node joins."""
    lead = runs.claim_job(db, job.id, "alpha")
    assert lead is not None and (lead.nnodes, lead.total_world_size) == (2, job.world_size)
    assert runs.claim_part(db, job.id, "beta") == multinode.WAIT  # no endpoint yet
    multinode.publish_endpoint(db, job.id, "alpha", "10.0.0.1", 29555)
    joined = runs.claim_part(db, job.id, "beta")
    assert isinstance(joined, runs.LaunchPlan)
    assert runs.claim_part(db, job.id, "beta") is None  # claimed once
    db.commit()
    return lead, joined


def test_a_node_holding_nothing_of_a_queued_job_does_not_wait_for_it(
    db: Session, two_nodes: None
) -> None:
    job = across(db, [("alpha", 0), ("alpha", 1)])
    assert runs.claim_part(db, job.id, "beta") is None  # a stray delivery: nothing to join


def test_each_node_claims_its_part_with_the_global_layout(db: Session, two_nodes: None) -> None:
    job = across(db, [("alpha", 1), ("alpha", 0), ("beta", 1), ("beta", 0)])
    lead, joined = claimed(db, job)
    assert (lead.node_rank, lead.rank_offset, lead.device_indices) == (0, 0, [1, 0])
    assert (joined.node_rank, joined.rank_offset, joined.device_indices) == (1, 2, [1, 0])
    assert lead.node_devices == joined.node_devices == 2  # each node's own: its cores' split
    assert (joined.master_addr, joined.master_port, joined.total_world_size) == (
        "10.0.0.1",
        29555,
        4,
    )


def test_the_job_succeeds_when_its_last_node_does(db: Session, two_nodes: None) -> None:
    job = across(db, [("alpha", 0), ("beta", 0)])
    claimed(db, job)
    runs.mark_running(db, job.id)
    assert multinode.finish_part(db, job.id, "beta", JobStatus.succeeded) is None
    ended = multinode.finish_part(db, job.id, "alpha", JobStatus.succeeded)
    assert ended is not None and ended.status == JobStatus.succeeded


def test_a_job_whose_parts_all_end_before_it_was_marked_running_still_succeeds(
    db: Session, two_nodes: None
) -> None:
    job = across(db, [("alpha", 0), ("beta", 0)])
    claimed(db, job)  # starting: the first node has not marked it running yet
    assert multinode.finish_part(db, job.id, "beta", JobStatus.succeeded) is None
    ended = multinode.finish_part(db, job.id, "alpha", JobStatus.succeeded)
    assert ended is not None and ended.status == JobStatus.succeeded


LIVE = "SELECT node FROM allocations WHERE released_at IS NULL ORDER BY node"


def test_one_node_failing_fails_the_job_and_each_node_frees_its_devices_when_its_ranks_are_gone(
    db: Session, two_nodes: None, redis_client: redis.Redis
) -> None:
    """Ending a job and freeing its devices are two steps (Slurm's completing): alpha's
    ranks may still run when beta's failure ends the job, so alpha's device stays held
    (releasing) until alpha's worker, told to stop, has killed them and confirms."""
    job = across(db, [("alpha", 0), ("beta", 0)])
    claimed(db, job)
    ended = multinode.finish_part(db, job.id, "beta", JobStatus.failed, error="rank 1 failed")
    db.commit()
    assert ended is not None and ended.status == JobStatus.failed
    assert ended.error == "on node beta: rank 1 failed"
    assert db.scalars(text(LIVE)).all() == ["alpha"]  # beta's is free: its ranks are gone
    # The board and the CLI show alpha's device releasing, not free and not simply held.
    holders = {(v.node, v.index): v.held_by for v in device_views(db, redis_client)}
    assert holders[("beta", 0)] is None
    alpha = holders[("alpha", 0)]
    assert alpha is not None and alpha.job_id == job.id and alpha.releasing
    multinode.renew_parts(db, [job.id], "alpha")
    assert runs.heartbeat(db, [job.id]) == {}  # alpha's runner is told to stop
    assert multinode.confirm_part(db, job.id, "alpha") == 1
    db.commit()
    assert db.scalars(text(LIVE)).all() == []
    assert multinode.confirm_part(db, job.id, "alpha") == 0  # once


def test_the_reaper_takes_a_job_whose_one_node_stopped_beating(
    db: Session, two_nodes: None
) -> None:
    job = across(db, [("alpha", 0), ("beta", 0)])
    claimed(db, job)
    multinode.renew_parts(db, [job.id], "alpha")  # alpha beats: its part and the job's heartbeat
    runs.heartbeat(db, [job.id])
    db.execute(
        text("UPDATE job_nodes SET heartbeat_at = now() - interval '1 hour' WHERE node = 'beta'")
    )
    db.commit()
    assert reap_lost(db, lease_s=30) == [job.id]
    db.commit()
    reaped = db.get(Job, job.id, populate_existing=True)
    assert reaped is not None and reaped.status == JobStatus.lost
    assert reaped.error is not None and reaped.error.startswith("node beta: no heartbeat")
    # Neither node has confirmed: beta is silent past its lease (its worker has stopped its
    # ranks or launches nothing before it settles), alpha beats and will confirm.
    assert db.scalars(text(LIVE)).all() == ["alpha", "beta"]
    assert multinode.release_silent_parts(db, lease_s=30) == [(job.id, "beta")]
    db.commit()
    assert db.scalars(text(LIVE)).all() == ["alpha"]
    assert multinode.release_silent_parts(db, lease_s=30) == []  # alpha's lease is fresh
    assert multinode.confirm_part(db, job.id, "alpha") == 1
    db.commit()
    assert db.scalars(text(LIVE)).all() == []


def test_a_node_whose_sampler_went_silent_is_offline_and_its_devices_not_chosen(
    db: Session, two_nodes: None
) -> None:
    db.execute(
        text("UPDATE nodes SET last_seen_at = now() - interval '5 minutes' WHERE name = 'beta'")
    )
    db.commit()
    with pytest.raises(NodeOffline, match="node beta is offline") as info:
        across(db, [("alpha", 0), ("beta", 0)])
    db.rollback()
    assert info.value.field == "devices"
    online = {row.name: row.online for row in list_nodes(db)}
    assert online == {"alpha": True, "beta": False}
    assert across(db, [("alpha", 0)]).allocations  # the other node's devices still serve


def spread(db: Session, count: int, **extra: object) -> Job:
    spec = JobCreate.model_validate({"kind": "sae", "config": CONFIG, "count": count, **extra})
    job = submission.create_job(db, spec, owner="tester")
    db.commit()
    return job


def test_a_count_over_nodes_takes_the_fewest_nodes_then_the_best_fit(
    db: Session, two_nodes: None
) -> None:
    register_devices(db, "4x80GiB", node="gamma")
    whole = spread(db, 4, nodes=2)  # one node can hold it: the fewest nodes
    assert {a.node for a in whole.allocations} == {"gamma"} and whole.node == "gamma"
    split = spread(db, 4, devices_per_node=2)  # exactly 2 x 2
    assert [(a.rank, a.node) for a in split.allocations] == [
        (0, "alpha"),
        (1, "alpha"),
        (2, "beta"),
        (3, "beta"),
    ]
    assert split.node == "alpha" and split.requested_devices is None
    assert (split.spread_nodes, split.devices_per_node) == (None, 2)
    # Stored as SQL NULL, not the JSON value null: `IS NULL` finds what names no device.
    unnamed = text(
        "SELECT requested_devices IS NULL AND requested_nodes IS NULL FROM jobs WHERE id = :id"
    )
    assert db.execute(unnamed, {"id": split.id}).scalar_one() is True


def test_a_count_over_nodes_is_refused_when_it_does_not_split_or_fit(
    db: Session, two_nodes: None
) -> None:
    with pytest.raises(ValidationError) as split:
        spread(db, 4, devices_per_node=3)
    assert split.value.errors()[0]["loc"] == ("devices_per_node",)
    never = r"no online nodes have 1 x 6 or 2 x 3 \(nodes x devices\) devices"
    with pytest.raises(Conflict, match=never) as room:
        spread(db, 6, nodes=2, config={"steps": 10, "batch_size": 96})  # never, however long
    assert room.value.field == "count"
    db.rollback()
    spread(db, 2, devices_per_node=2)
    with pytest.raises(Conflict, match="free devices now") as busy:
        spread(db, 4, devices_per_node=2, queue=False)
    assert busy.value.field == "count"
    db.rollback()
    assert db.scalar(text("SELECT count(*) FROM jobs")) == 1  # refused: nothing waits


def test_a_preempted_job_across_nodes_starts_again_with_fresh_parts(
    db: Session, two_nodes: None
) -> None:
    """Queued again (preempted) and placed again by the scheduler, its first node's claim
    replaces the earlier run's parts instead of failing on them."""
    job = across(db, [("alpha", 0), ("beta", 0)])
    claimed(db, job)
    runs.mark_running(db, job.id)
    assert runs.requeue_job(db, job.id) is not None
    db.commit()
    decided = passes.compute_plan(db, None, half_life_s=86400).starts
    assert [s.job_id for s in decided] == [job.id]
    assert passes.start(db, decided[0])
    db.commit()
    again = runs.claim_job(db, job.id, "alpha")
    db.commit()
    assert again is not None and again.nnodes == 2
    assert runs.claim_part(db, job.id, "beta") == multinode.WAIT  # the new run's rendezvous


PEER = "rank 0 failed: RuntimeError: [gloo] Read error [10.0.0.2]:1234: Connection reset by peer"


def test_a_part_that_only_lost_a_peer_waits_for_the_real_cause(
    db: Session, two_nodes: None
) -> None:
    """Node-beta's rank fails; alpha's ranks then lose their peer and alpha reports first.
    The cause is beta's, with what alpha saw after it; never alpha's connection error."""
    job = across(db, [("alpha", 0), ("beta", 0)])
    claimed(db, job)
    runs.mark_running(db, job.id)
    assert multinode.finish_part(db, job.id, "alpha", JobStatus.failed, error=PEER) is None
    db.commit()
    assert db.get(Job, job.id, populate_existing=True).status == JobStatus.running  # type: ignore[union-attr]
    assert db.scalars(text(LIVE)).all() == ["beta"]  # alpha's ranks are gone: its device frees
    real = "rank 1 failed: RuntimeError: CUDA error: out of memory"
    ended = multinode.finish_part(db, job.id, "beta", JobStatus.failed, error=real)
    assert ended is not None and ended.status == JobStatus.failed
    assert ended.error == f"on node beta: {real}; then on node alpha: {PEER}"


def test_a_silent_node_is_the_cause_when_its_peers_only_lost_it(
    db: Session, two_nodes: None
) -> None:
    job = across(db, [("alpha", 0), ("beta", 0)])
    claimed(db, job)
    runs.mark_running(db, job.id)
    assert multinode.finish_part(db, job.id, "alpha", JobStatus.failed, error=PEER) is None
    db.execute(
        text("UPDATE job_nodes SET heartbeat_at = now() - interval '1 hour' WHERE node = 'beta'")
    )
    db.commit()
    assert reap_lost(db, lease_s=30) == [job.id]
    reaped = db.get(Job, job.id, populate_existing=True)
    assert reaped is not None and reaped.error is not None
    assert reaped.error.startswith("node beta: no heartbeat for over 30 s")
    assert reaped.error.endswith(f"; then on node alpha: {PEER}")


def test_a_peer_hung_inside_its_heartbeat_holds_back_neither_this_nodes_lease_nor_its_beat(
    db: Session, two_nodes: None, settings: Settings, session_factory: sessionmaker[Session]
) -> None:
    """beta stops (SIGSTOP, its link down) between its heartbeat's UPDATE of the job row and its
    commit: it holds the row's lock until Postgres ends its session (the idle bound, a lease).
    alpha's worker renewed its own part in the same transaction and queued behind that lock, so
    its part went stale too and the reaper blamed both nodes (CI: 'node node-a, node-b: no
    heartbeat', the 'link down' fault). alpha's part is now committed first, alone, and its wait
    for the job rows ends after a beat."""
    job = across(db, [("alpha", 0), ("beta", 0)])
    claimed(db, job)
    db.execute(text("UPDATE job_nodes SET heartbeat_at = now() - interval '1 hour'"))
    db.commit()
    hung = session_factory()
    alpha = WorkerRuntime(
        settings.model_copy(update={"node_name": "alpha", "heartbeat_interval_s": 0.5}),
        launcher=Launcher(),
    )
    try:
        multinode.renew_parts(hung, [job.id], "beta")
        assert job.id in runs.heartbeat(hung, [job.id])  # locked, never committed
        alpha.track(job.id)
        started = time.monotonic()
        with pytest.raises(DBAPIError, match="lock timeout"):
            alpha.heartbeat_once()
        assert time.monotonic() - started < 3  # a beat of 0.5 s, not beta's session's life
        fresh = text("SELECT node, heartbeat_at > now() - interval '1 minute' FROM job_nodes")
        assert dict(db.execute(fresh).all()) == {"alpha": True, "beta": False}
    finally:
        alpha.engine.dispose()
        hung.rollback()
        hung.close()
    db.commit()
    assert reap_lost(db, lease_s=30) == [job.id]
    db.commit()
    reaped = db.get(Job, job.id, populate_existing=True)
    assert reaped is not None and reaped.error is not None
    assert reaped.error.startswith("node beta: no heartbeat"), reaped.error
