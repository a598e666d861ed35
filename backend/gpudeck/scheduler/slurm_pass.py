"""The Slurm executor's pass, run by the active scheduler every `slurm_poll_s` for every cluster:
submit the jobs due (one sbatch each, from a batch script built from the typed spec), read every
live job's state with one poll (one squeue and at most one sacct whatever their number), carry
out cancels (USR1 for a final checkpoint, scancel after the grace), and apply what Slurm says
(services/executors/slurm_runs.py). A follower per running job relays its ranks' events and logs
from the shared directory (worker/slurm_follower.py).

A pass runs in a thread of its own: a cluster that does not answer (each command bounded by
`slurm_command_timeout_s`) never holds up the queue of GPUDeck's own nodes. Passes never overlap.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import redis
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.config import Settings
from gpudeck.core.db import transaction
from gpudeck.models import Job, JobStatus
from gpudeck.scheduler.slurm_scripts import STOP_MARKER, BatchScripts, ClusterRef
from gpudeck.services.executors import clusters as cluster_rows
from gpudeck.services.executors import slurm_runs
from gpudeck.slurm import JobState, SlurmClient, SlurmError, SlurmRefused, render, split_array
from gpudeck.slurm.client import REMOVED_WHILE_PENDING
from gpudeck.slurm.states import TERMINAL
from gpudeck.worker.events import expire_stream, publish_status
from gpudeck.worker.runner import job_paths
from gpudeck.worker.slurm_follower import SlurmFollower

log = logging.getLogger(__name__)


class Context(Protocol):
    """What a pass needs of the scheduler's context (scheduler.duties.Context)."""

    @property
    def settings(self) -> Settings: ...
    @property
    def sessions(self) -> sessionmaker[Session]: ...
    @property
    def redis(self) -> redis.Redis: ...


APPLY_PER_TRANSACTION = 200  # a slurmctld outage changes every job's view at once


@dataclass(frozen=True)
class Ending:
    """A job Slurm ended, its ranks' output stored: what its end is decided from."""

    job_id: int
    read: JobState
    rank_error: str | None
    signalled: bool  # USR1 reached its batch shell (the time limit's warning, or a cancel)


@dataclass
class SlurmExecutor:
    # Each cluster's adapter (over ssh: connections kept under the scheduler's data directory).
    clients: cluster_rows.SlurmClients = field(default_factory=cluster_rows.SlurmClients)
    followers: dict[int, SlurmFollower] = field(default_factory=dict)
    _thread: threading.Thread | None = None
    _max_array_sizes: dict[str, int] = field(default_factory=dict)
    # Array id -> the throttle this executor set (or submitted it with).
    throttles: dict[str, int] = field(default_factory=dict)

    def max_array_size(self, cluster: str, client: SlurmClient) -> int:
        """The cluster's MaxArraySize, read once (a slurm.conf change needs a restart)."""
        if cluster not in self._max_array_sizes:
            self._max_array_sizes[cluster] = client.max_array_size()
        return self._max_array_sizes[cluster]

    def kick(self, ctx: Context) -> None:
        """Start a pass unless one still runs (the scheduler's duty)."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._thread = threading.Thread(
            target=self.run_pass, args=(ctx,), name="gpudeck-slurm-pass", daemon=True
        )
        self._thread.start()

    def join(self, timeout_s: float = 60.0) -> None:
        """Wait for a pass under way, then close every follower (a scheduler that stops)."""
        if self._thread is not None:
            self._thread.join(timeout_s)
        for follower in self.followers.values():
            follower.close()
        self.followers.clear()

    def run_pass(self, ctx: Context) -> None:
        with transaction(ctx.sessions) as session:
            rows = cluster_rows.list_clusters(session)
            refs = [ClusterRef.of(c) for c in rows]
        for ref in refs:
            try:
                ClusterPass(self, ctx, ref).run()
            except Exception:  # one cluster's trouble is not another's
                log.exception("Slurm cluster %s: the pass failed", ref.name)


@dataclass
class ClusterPass:
    executor: SlurmExecutor
    ctx: Context
    cluster: ClusterRef

    @property
    def client(self) -> SlurmClient:
        timeout = self.ctx.settings.slurm_command_timeout_s
        return self.executor.clients(self.cluster.row, timeout)

    def run(self) -> None:
        client = self.client
        self.submit_due(client)
        with transaction(self.ctx.sessions) as session:
            live = slurm_runs.live_jobs(session, self.cluster.id)
        submitted = [j for j in live if j.slurm_job_id is not None]
        # An array's tasks are asked for by the array's id: one word for a thousand members.
        asked = {j.slurm_job_id.split("_", 1)[0] for j in submitted if j.slurm_job_id}
        states = client.poll(asked)
        changed: list[tuple[slurm_runs.LiveJob, JobState]] = []
        pending_cancels: list[str] = []
        endings: list[Ending] = []
        for job in submitted:
            read = _lookup(states, job.slurm_job_id or "")
            try:
                if read.state in TERMINAL:
                    endings.append(self.drain(job, read))
                    continue
                if job.cancel_requested and read.state == "queued":
                    pending_cancels.append(job.slurm_job_id or "")  # nothing runs: at once
                elif job.cancel_requested and read.state != "unknown":
                    self.stop(client, job)
            except SlurmError as exc:
                log.warning("job %s on %s: %s", job.id, self.cluster.name, exc)
            except Exception:  # one job's trouble must not hold up every other job's
                log.exception("job %s on %s: the pass could not apply %s", job.id,
                              self.cluster.name, read)  # fmt: skip
                continue
            if slurm_runs.changes(job, read) or self._unfollowed(job, read):
                changed.append((job, read))
        for start in range(0, len(changed), APPLY_PER_TRANSACTION):
            batch = changed[start : start + APPLY_PER_TRANSACTION]
            try:
                self.apply(batch)
            except Exception:  # apply them one by one: only the one in trouble waits
                log.exception("%s: a batch of %d changes failed", self.cluster.name, len(batch))
                for one in batch:
                    try:
                        self.apply([one])
                    except Exception:
                        log.exception("job %s on %s: not applied", one[0].id, self.cluster.name)
        self.end(endings)
        self.throttle(client)
        if pending_cancels:
            try:
                client.cancel_many(pending_cancels)
            except SlurmError as exc:
                log.warning("cancels on %s wait for the next pass: %s", self.cluster.name, exc)

    def apply(self, batch: list[tuple[slurm_runs.LiveJob, JobState]]) -> None:
        """What the poll changed, for a batch of jobs in one transaction: the views of those
        that keep their status in one statement, each start or requeue through the state
        machine; then what to say."""
        moving: list[tuple[slurm_runs.LiveJob, JobState]] = []
        views: dict[int, dict[str, Any]] = {}
        for j, read in batch:
            if slurm_runs.moves(j, read):
                moving.append((j, read))
            else:
                views[j.id] = slurm_runs.view_after(j.view, read)
        with transaction(self.ctx.sessions) as session:
            slurm_runs.write_views(session, views)
            seen = [(j, read, slurm_runs.apply_live(session, j.id, read)) for j, read in moving]
        for job, read in batch:
            if self._unfollowed(job, read):
                self.executor.followers[job.id] = self.follower(job)
        for job, _, what in seen:
            if what.started:
                self._say(job.id, JobStatus.running)
            elif what.requeued:
                self._say(job.id, JobStatus.queued)

    def throttle(self, client: SlurmClient) -> None:
        """Each live array's throttle to its sweep's max_parallel, where that changed (a new
        leader sets each once: the command is idempotent)."""
        with transaction(self.ctx.sessions) as session:
            wanted = slurm_runs.array_throttles(session, self.cluster.id)
        applied = self.executor.throttles
        for array_id, most in wanted.items():
            if applied.get(array_id) == most:
                continue
            try:
                client.set_array_throttle(array_id, most)
            except SlurmError as exc:  # an array that just ended; the rest next pass
                log.warning("array %s on %s: throttle: %s", array_id, self.cluster.name, exc)
                continue
            applied[array_id] = most

    def _unfollowed(self, job: slurm_runs.LiveJob, read: JobState) -> bool:
        return read.state in ("starting", "running") and job.id not in self.executor.followers

    # -- submit ------------------------------------------------------------------------------

    def submit_due(self, client: SlurmClient) -> None:
        """sbatch each due job, one transaction each: its row stays locked while sbatch runs,
        so no other pass submits it twice. Then each sweep's due members as arrays."""
        self.submit_jobs(client)
        self.submit_sweeps(client)

    def submit_jobs(self, client: SlurmClient) -> None:
        while True:
            with transaction(self.ctx.sessions) as session:
                due = slurm_runs.due_for_submit(session, self.cluster.id, limit=1)
                if not due:
                    return
                job = due[0]
                try:
                    slurm_id = self.adopted(client, job) or client.submit(
                        render(self.scripts.batch_spec(job))
                    )
                except SlurmRefused as exc:
                    ended = slurm_runs.refuse(session, job.id, str(exc))
                    self._say(ended.id, JobStatus.failed, ended.error)
                    continue
                except SlurmError as exc:
                    # Not answered is not refused: Slurm may have queued it. It stays queued
                    # here, and the next pass looks for it by name before submitting again.
                    log.warning("job %s: sbatch on %s: %s", job.id, self.cluster.name, exc)
                    job.slurm = {**(job.slurm or {}), "sbatch_unanswered": True}
                    return
                slurm_runs.record_submitted(session, job, slurm_id)
                log.info("job %s: Slurm job %s on %s", job.id, slurm_id, self.cluster.name)

    def adopted(self, client: SlurmClient, job: Job) -> str | None:
        """After an sbatch that did not answer: the Slurm job it queued anyway, if any (found
        by its name, gpudeck-<id>), so that one GPUDeck job is never two Slurm jobs."""
        if not (job.slurm or {}).get("sbatch_unanswered"):
            return None
        found = client.find(f"gpudeck-{job.id}")
        if found:
            log.info("job %s: its unanswered sbatch had queued Slurm job %s", job.id, found[0])
        return found[0] if found else None

    def submit_sweeps(self, client: SlurmClient) -> None:
        """A sweep's due members as job arrays (`--array=0-(N-1)%max_parallel`), split past
        the cluster's MaxArraySize and chained (afterany) so max_parallel holds across them,
        after the sweep's earlier arrays if it has any. One transaction: its members stay
        locked while sbatch runs."""
        with transaction(self.ctx.sessions) as session:
            for sweep, members in slurm_runs.sweep_members_due(session, self.cluster.id):
                after = slurm_runs.last_array(session, sweep.id)
                size = self.executor.max_array_size(self.cluster.name, client)
                for chunk in split_array(len(members), size):
                    part = members[chunk.offset : chunk.offset + chunk.count]
                    spec, task_dirs = self.scripts.array_spec(sweep, part, chunk.offset, after)
                    try:
                        array_id = client.submit(render(spec))
                    except SlurmRefused as exc:
                        for job in part:
                            ended = slurm_runs.refuse(session, job.id, str(exc))
                            self._say(ended.id, JobStatus.failed, ended.error)
                        break
                    except SlurmError as exc:  # the rest waits for the next pass
                        log.warning("sweep %s: sbatch on %s: %s", sweep.id, self.cluster.name, exc)
                        return
                    self.executor.throttles[array_id] = spec.array.max_parallel if spec.array else 0
                    for task, (job, task_dir) in enumerate(zip(part, task_dirs, strict=True)):
                        slurm_runs.record_submitted(
                            session, job, f"{array_id}_{task}", run_dir=str(task_dir)
                        )
                    log.info(
                        "sweep %s: members %d-%d as Slurm array %s on %s", sweep.id,
                        chunk.offset, chunk.offset + chunk.count - 1, array_id, self.cluster.name,
                    )  # fmt: skip
                    after = array_id

    @property
    def scripts(self) -> BatchScripts:
        return BatchScripts(self.ctx.settings, self.cluster)

    def run_dir(self, job: slurm_runs.LiveJob) -> Path:
        """Where the job's ranks write: a sweep member's array task directory, or its own."""
        given = job.view.get("run_dir")
        return Path(given) if given else job_paths(self.cluster.shared_dir, job.id)[0]

    # -- follow ------------------------------------------------------------------------------

    def follower(self, job: slurm_runs.LiveJob) -> SlurmFollower:
        settings = self.ctx.settings
        run_dir = self.run_dir(job)
        return SlurmFollower(
            job.id, self.cluster.name, run_dir, self.cluster.shared_dir, job.world_size,
            self.ctx.redis, self.ctx.sessions, settings.log_store_bytes,
        )  # fmt: skip

    def stop(self, client: SlurmClient, job: slurm_runs.LiveJob) -> None:
        """A running job asked to stop gets USR1 (its ranks write a final checkpoint and
        return), then scancel once the grace has passed. (One still waiting in Slurm is
        scancelled at once, with the pass's other such cancels.)"""
        assert job.slurm_job_id is not None
        signalled = job.view.get("stop_signalled_at")
        if signalled is None:
            client.signal(job.slurm_job_id, "USR1")
            self._note(job.id, stop_signalled_at=time.time())
        elif time.time() - float(signalled) > self.ctx.settings.cancel_grace_s:
            client.cancel(job.slurm_job_id)

    def drain(self, job: slurm_runs.LiveJob, read: JobState) -> Ending:
        """Slurm ended it: everything its ranks wrote is stored first (its end follows, with
        the pass's other ends)."""
        run_dir = self.run_dir(job)
        follower = self.executor.followers.pop(job.id, None)
        if follower is None and any(run_dir.glob("rank*.log")):
            follower = self.follower(job)  # it started and ended between two polls
        rank_error = follower.close() if follower is not None else None
        return Ending(job.id, read, rank_error, (run_dir / STOP_MARKER).exists())

    def end(self, endings: list[Ending]) -> None:
        """The ends, a transaction per batch (a cancelled sweep's thousands of members end in
        one pass), then each on its job's feed."""
        said: list[tuple[int, JobStatus, str | None]] = []
        for start in range(0, len(endings), APPLY_PER_TRANSACTION):
            batch = endings[start : start + APPLY_PER_TRANSACTION]
            try:
                said += self._finish(batch)
            except Exception:  # one by one: only the one in trouble waits for the next pass
                log.exception("%s: a batch of %d ends failed", self.cluster.name, len(batch))
                for one in batch:
                    try:
                        said += self._finish([one])
                    except Exception:
                        log.exception("job %s on %s: end not recorded", one.job_id,
                                      self.cluster.name)  # fmt: skip
        for job_id, status, error in said:
            self._say(job_id, status, error)
            expire_stream(self.ctx.redis, job_id)

    def _finish(self, endings: list[Ending]) -> list[tuple[int, JobStatus, str | None]]:
        said = []
        with transaction(self.ctx.sessions) as session:
            for e in endings:
                ended = slurm_runs.finish(
                    session, e.job_id, e.read, e.rank_error, signalled=e.signalled
                )
                if ended is not None:
                    said.append((ended.id, JobStatus(ended.status), ended.error))
        return said

    def _note(self, job_id: int, **values: object) -> None:
        with transaction(self.ctx.sessions) as session:
            row = session.get(Job, job_id, with_for_update=True)
            if row is not None:
                row.slurm = {**(row.slurm or {}), **values}

    def _say(self, job_id: int, status: JobStatus, error: str | None = None) -> None:
        try:
            publish_status(self.ctx.redis, job_id, status.value, error=error)
        except Exception as exc:  # the feed is best effort; the row is the record
            log.warning("job %s: status not published: %s", job_id, exc)


def _lookup(states: dict[str, JobState], slurm_job_id: str) -> JobState:
    """A job's or an array task's state in a poll's answer. An array asked for as a whole reads
    as one `unknown` entry when Slurm did not answer; a task missing from an array Slurm did
    list was cancelled before it started (Slurm keeps no record of such a task)."""
    array_id = slurm_job_id.split("_", 1)[0]
    found = states.get(slurm_job_id)
    if found is not None:
        return found
    whole = states.get(array_id)
    if whole is not None and (whole.state == "unknown" or "_" not in slurm_job_id):
        return whole  # Slurm silent about the array (the array's own record speaks for none)
    if "_" in slurm_job_id and any(s.array_job_id == array_id for s in states.values()):
        return JobState(
            slurm_job_id, "cancelled", slurm_state="CANCELLED", reason=REMOVED_WHILE_PENDING
        )
    return JobState(slurm_job_id, "unknown", reason=f"Slurm lists no job {slurm_job_id}")
