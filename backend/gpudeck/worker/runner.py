"""Run one job on this node: claim it, launch its ranks, watch them, record the outcome.

The runner's loop relays events and watches the ranks; the runtime's heartbeat thread renews the
job's lease and tells the runner (through JobHandle) when a cancel was asked for or when the job
stopped being ours (reaped as lost).

Every write of the runner to Postgres or Redis waits out a short outage of that store (see
worker.retry): a job that ran through a database pause or a Redis restart still ends as it
should. A failed job names the rank that failed first: the first exit the worker observed,
a death by signal before a peer's collective error that followed it.
"""

from __future__ import annotations

import dataclasses
import logging
import signal
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import redis
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.config import Settings
from gpudeck.core.db import transaction
from gpudeck.core.netif import socket_ifname
from gpudeck.core.redis import sync_client
from gpudeck.engine.checkpoint_dir import job_checkpoints
from gpudeck.engine.checkpoint_tmp import remove_partial
from gpudeck.engine.command import CommandGroup
from gpudeck.engine.contract import DeviceType, EventsTarget, JobLaunch
from gpudeck.engine.kinds import resumes_from_checkpoint
from gpudeck.engine.launch import Launcher, RankGroup, free_port, threads_per_rank
from gpudeck.models import JobStatus
from gpudeck.services.jobs import checkpoints
from gpudeck.services.jobs.events import job_stream
from gpudeck.services.runs import lifecycle as runs
from gpudeck.services.runs import multinode
from gpudeck.services.runs.lifecycle import LaunchPlan
from gpudeck.telemetry.enforce import memory_kill_cause
from gpudeck.telemetry.stream import register_rank_pid, unregister_pids
from gpudeck.worker.events import expire_stream, send, status_data
from gpudeck.worker.log_shipper import LogShipper
from gpudeck.worker.relay import EventRelay
from gpudeck.worker.retry import until_stored


class RunnerHost(Protocol):
    """What a runner needs from the worker process that hosts it (worker.runtime provides it;
    a protocol, so the runner does not import its host)."""

    settings: Settings
    sessionmaker: sessionmaker[Session]
    redis: redis.Redis
    launcher: Launcher
    stopping: threading.Event

    def track(self, job_id: int) -> JobHandle: ...

    def untrack(self, job_id: int) -> None: ...


log = logging.getLogger(__name__)
T = TypeVar("T")
FAIL_GRACE_S = 3.0  # the other ranks of a failed job sit in a collective: no final checkpoint
POLL_S = 0.2
LOG_TAIL_BYTES = 4000
EVENTS_TIMEOUT_S = 2.0  # a follower's log lines on the job's stream: best effort
JOIN_WAIT_S = 60.0  # how long a node waits for the first node of a job to publish its rendezvous


@dataclass
class JobHandle:
    """Shared between a job's runner and the heartbeat thread."""

    job_id: int
    cancel: threading.Event = field(default_factory=threading.Event)
    # The scheduler preempts it for a higher-priority job: stop as a cancel does, then requeue.
    preempt: threading.Event = field(default_factory=threading.Event)
    gone: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True)
class Outcome:
    status: JobStatus
    error: str | None = None


def job_paths(data_dir: Path, job_id: int) -> tuple[Path, Path]:
    """(run dir with rank logs, checkpoint dir) of a job."""
    return data_dir / "jobs" / str(job_id), job_checkpoints(data_dir, job_id)


@dataclass
class RankExit:
    """A rank's exit, in the order the worker observed it."""

    rank: int
    code: int  # negative: killed by that signal

    @property
    def how(self) -> str:
        if self.code < 0:
            try:
                name = signal.Signals(-self.code).name
            except ValueError:
                name = f"signal {-self.code}"
            return f"was killed by {name}"
        return f"exited with code {self.code}"


def observe_exits(codes: dict[int, int], seen: list[RankExit]) -> list[RankExit]:
    """Append the ranks that exited since the last look to `seen`; among ranks seen exiting at
    the same look, a death by signal comes first (its peers' collective errors follow it)."""
    known = {e.rank for e in seen}
    new = [RankExit(rank, code) for rank, code in codes.items() if rank not in known]
    new.sort(key=lambda e: (e.code >= 0, e.rank))
    seen.extend(new)
    return new


@dataclass
class Watch:
    """What watching a job's ranks has found so far (JobRunner._watch)."""

    limit_at: float  # time.monotonic() of the job's time limit
    timed_out: bool = False
    stop_deadline: float | None = None  # once the ranks were asked to stop: when to kill them
    exits: list[RankExit] = field(default_factory=list)
    first_failure: RankExit | None = None  # the failure that made the others stop


class JobRunner:
    def __init__(self, runtime: RunnerHost, job_id: int) -> None:
        self.runtime = runtime
        self.job_id = job_id
        self.settings = runtime.settings
        self.run_dir, self.checkpoint_dir = job_paths(self.settings.data_dir, job_id)
        self._registered: set[int] = set()  # PIDs registered for the sampler
        self._kind: str | None = None  # the job's kind, registered with them

    def run(self) -> None:
        plan = self._in_db("claiming it", lambda s: runs.claim_job(s, self.job_id, self.node))
        if plan is None:
            plan = self._join()  # a job across nodes that another node leads, or nothing
        if plan is None:
            log.info("job %s is not queued on this node; nothing to do", self.job_id)
            return
        if plan.leads:
            # A stream left under this id (a database reset, Redis kept) must not feed this run.
            self._in_redis("clearing its stream", lambda: self.runtime.redis.delete(self.stream))
            if plan.nnodes > 1:
                try:
                    plan = self._publish_rendezvous(plan)
                except OSError as exc:  # GPUDECK_NODE_ADDRESS is not an address of this node
                    address = self.settings.node_address
                    why = f"node {self.node} cannot listen on its address {address}: {exc}"
                    self._finish(Outcome(JobStatus.failed, why), plan)
                    return
            self._status(JobStatus.starting)
        handle = self.runtime.track(self.job_id)
        group: RankGroup | CommandGroup | None = None
        shipper: LogShipper | None = None
        try:
            group = self.runtime.launcher.launch(self._contract(plan))
            shipper = self._ship_logs(plan, group)
            self._register_pids(group, plan.kind)
            log.info(
                "job %s: %d ranks in group %d (%s start)",
                self.job_id,
                plan.world_size,
                group.pgid,
                "warm" if group.warm else "cold",
            )
            if plan.leads and self._in_db(
                "marking it running", lambda s: runs.mark_running(s, self.job_id)
            ):
                self._status(JobStatus.running)
            outcome = self._supervise(group, handle, plan)
        except Exception:
            log.exception("job %s: the worker failed while running it", self.job_id)
            outcome = Outcome(JobStatus.failed, "worker error:\n" + traceback.format_exc())
        finally:
            if group is not None:
                group.kill()  # whatever happened above, no process of the job survives
                group.close()
                if shipper is not None:
                    shipper.close()  # the rest of every log, before the job can end
                self._unregister_pids(group)
                self._record_rank_memory(group, plan)
                remove_partial(self.checkpoint_dir)  # a rank killed mid-write left these
            self.runtime.untrack(self.job_id)
        self._finish(outcome, plan)

    def _ship_logs(self, plan: LaunchPlan, group: RankGroup | CommandGroup) -> LogShipper:
        """This node's ranks' logs into Postgres, for an API on any machine (a script may run
        several ranks per device); a node that does not lead also puts them on the stream."""
        local = max(plan.world_size, group.local_ranks)
        redis_url = str(self.settings.redis_url)
        shipper = LogShipper(
            self.job_id,
            self.node,
            self.run_dir,
            range(plan.rank_offset, plan.rank_offset + local),
            self.runtime.sessionmaker,
            self.settings.log_store_bytes,
            # Its own client, with a timeout: a paused Redis must not hold the logs up.
            events=None if plan.leads else sync_client(redis_url, timeout_s=EVENTS_TIMEOUT_S),
        )
        shipper.start()
        return shipper

    def _join(self) -> LaunchPlan | None:
        """Claim this node's part of a job across nodes once its first node has published the
        rendezvous; None when there is none (or the first node never publishes in time: its
        part's lease then lapses and the reaper ends the job)."""
        deadline = time.monotonic() + JOIN_WAIT_S
        while not self.runtime.stopping.is_set():
            found = self._in_db(
                "claiming its part", lambda s: runs.claim_part(s, self.job_id, self.node)
            )
            if not isinstance(found, str):
                return found
            if time.monotonic() > deadline:
                log.warning("job %s: its first node published no rendezvous", self.job_id)
                return None
            time.sleep(POLL_S)
        return None

    def _publish_rendezvous(self, plan: LaunchPlan) -> LaunchPlan:
        """Node rank 0 of a job across nodes: its advertised address and a port free on it,
        where rank 0 (or torchrun's agent) hosts the store the other nodes join."""
        address = self.settings.node_address
        port = free_port(address)
        self._in_db(
            "publishing its rendezvous",
            lambda s: multinode.publish_endpoint(s, self.job_id, self.node, address, port),
        )
        return dataclasses.replace(plan, master_addr=address, master_port=port)

    @property
    def node(self) -> str:
        return self.settings.node_name

    @property
    def stream(self) -> str:
        return job_stream(self.job_id)

    def _in_db(self, what: str, action: Callable[[Session], T]) -> T:
        """One transaction, retried until Postgres answers."""

        def attempt() -> T:
            with transaction(self.runtime.sessionmaker) as session:
                return action(session)

        return until_stored(attempt, f"job {self.job_id}: {what}")

    def _in_redis(self, what: str, action: Callable[[], T]) -> T:
        return until_stored(action, f"job {self.job_id}: {what}")

    def _register_pids(self, group: RankGroup | CommandGroup, kind: str) -> None:
        """The sampler tells GPUDeck's processes from external ones by these PIDs. A command
        job's process is its guard, no rank (None): its ranks appear later (_register_ranks)."""
        self._kind = kind
        command = isinstance(group, CommandGroup)
        for rank, process in enumerate(group.processes):
            self._register_pid(process.pid, None if command else rank)

    def _register_pid(self, pid: int, rank: int | None) -> None:
        def register() -> None:
            register_rank_pid(self.runtime.redis, self.node, pid, self.job_id, rank, self._kind)

        self._in_redis("registering its rank PIDs", register)
        self._registered.add(pid)

    def _register_ranks(self, group: RankGroup | CommandGroup) -> None:
        """A command job's ranks, as its guard finds them (torchrun starts them, not us)."""
        if isinstance(group, CommandGroup):
            for pid, rank in group.rank_pids().items():
                if pid not in self._registered:
                    self._register_pid(pid, rank)

    def _unregister_pids(self, group: RankGroup | CommandGroup) -> None:
        pids = sorted(self._registered | {p.pid for p in group.processes})
        self._in_redis(
            "unregistering its rank PIDs",
            lambda: unregister_pids(self.runtime.redis, self.node, pids),
        )

    def _record_rank_memory(self, group: RankGroup | CommandGroup, plan: LaunchPlan) -> None:
        """A command job's peak host memory per rank, as its guard measured it (on simulated
        devices, the memory its ranks used)."""
        found = group.rank_memory() if isinstance(group, CommandGroup) else None
        if found is None:
            return
        simulated = plan.device_source != "nvml"
        self._in_db(
            "recording its memory",
            lambda s: runs.record_rank_memory(s, self.job_id, found, host_is_device=simulated),
        )

    def _contract(self, plan: LaunchPlan) -> JobLaunch:
        """The launch contract for this node's ranks: the one place the worker builds it."""
        found = self._resume_checkpoint(plan)
        resume_from = str(found) if found is not None else None
        device_type: DeviceType = "cuda" if plan.device_source == "nvml" else "cpu"
        return JobLaunch(
            job_id=plan.job_id,
            kind=plan.kind,
            config=plan.config,
            run_dir=str(self.run_dir),
            data_dir=str(self.settings.data_dir),
            checkpoint_dir=str(self.checkpoint_dir),
            device_type=device_type,
            device_indices=tuple(plan.device_indices),
            resume_from=resume_from,
            events=EventsTarget(self.settings.redis_url, job_stream(plan.job_id)),
            keep_checkpoints=self.settings.keep_checkpoints,
            master_addr=plan.master_addr or "127.0.0.1",
            master_port=plan.master_port,
            node_rank=plan.node_rank,
            nnodes=plan.nnodes,
            rank_offset=plan.rank_offset,
            total_world_size=plan.total_world_size,
            socket_ifname=socket_ifname(self.settings.node_address) if plan.nnodes > 1 else None,
            reserved_bytes_per_device=plan.reserved_bytes_per_device,
            context_reserve_bytes=plan.context_reserve_bytes,
            num_threads=self._threads(plan),
        )

    @staticmethod
    def _threads(plan: LaunchPlan) -> int:
        """A rank's CPU threads. A sharing job's rank has neighbours on its own device: one
        each (8 tiny SAE members on 2 cores with 2 threads each: 1.0 s a step, against 0.06 s
        with 1 thread). Any other: one device's share of the node's cores, as the jobs on the
        other devices get theirs."""
        if plan.reserved_bytes_per_device is not None:
            return 1
        return threads_per_rank(plan.world_size, node_devices=plan.node_devices)

    def _resume_checkpoint(self, plan: LaunchPlan) -> Path | None:
        """The checkpoint the ranks start from: a job that ran before (it was preempted)
        continues from its own newest one; a resume job from its source's."""
        data_dir = self.settings.data_dir
        for source in (plan.job_id if plan.ran_before else None, plan.resume_from_job_id):
            if source is None:
                continue

            def newest(session: Session, job_id: int = source) -> Path | None:
                return checkpoints.newest_complete(session, job_id, data_dir)

            found = self._in_db("finding the checkpoint to resume from", newest)
            if found is not None:
                # Its writer has stopped: what its rank 0 left half-written is garbage.
                remove_partial(found.parent)
                return found
            if source == plan.resume_from_job_id and resumes_from_checkpoint(plan.kind):
                raise RuntimeError(f"job {source} has no complete checkpoint")
        return None  # a preempted job with no checkpoint yet starts again from step 0

    def _supervise(
        self, group: RankGroup | CommandGroup, handle: JobHandle, plan: LaunchPlan
    ) -> Outcome | None:
        """Watch the ranks to their end, then say what that end means; None: the job stopped
        being ours (reaped, or finished elsewhere)."""
        relay = self._relay(group, plan)
        watch = self._watch(group, handle, plan, relay)
        if watch is not None:
            self._forward(group)
        if relay is not None:
            relay.drain()
        return None if watch is None else self._outcome(group, handle, plan, relay, watch)

    def _relay(self, group: RankGroup | CommandGroup, plan: LaunchPlan) -> EventRelay | None:
        """Only the first node relays the job's stream into the job's rows (metrics, progress,
        checkpoints): one relay per job. Every node forwards its command's output to it."""
        if not plan.leads:
            return None
        return EventRelay(
            self.job_id,
            self.runtime.redis,
            self.runtime.sessionmaker,
            self.settings.data_dir,
            self.run_dir,
            max(plan.world_size, group.local_ranks),  # a script may run several per device
            node=self.node,
        )

    def _watch(
        self,
        group: RankGroup | CommandGroup,
        handle: JobHandle,
        plan: LaunchPlan,
        relay: EventRelay | None,
    ) -> Watch | None:
        """Until every rank has exited: relay their events, stop them when asked to (or at the
        time limit), and stop the others once one fails. None: the job stopped being ours,
        and its ranks here are killed."""
        watch = Watch(limit_at=time.monotonic() + plan.time_limit_s)
        while not group.done:
            new = observe_exits(group.wait(POLL_S), watch.exits)
            self._register_ranks(group)
            self._forward(group)  # a command's rank logs, on any node: lines on the stream
            if relay is not None:
                relay.pump()
            if handle.gone.is_set():
                group.kill()
                return None
            self._stop_if_asked(group, handle, plan, watch)
            failures = [e for e in new if e.code != 0]
            if watch.stop_deadline is None and failures and watch.first_failure is None:
                watch.first_failure = failures[0]
                group.stop(FAIL_GRACE_S)  # a rank failed: stop the others
        return watch

    def _stop_if_asked(
        self, group: RankGroup | CommandGroup, handle: JobHandle, plan: LaunchPlan, watch: Watch
    ) -> None:
        """A cancel, a preemption, the worker's shutdown or the time limit: SIGTERM, the grace
        for a final checkpoint, then SIGKILL (a job at its limit ends `timeout`)."""
        if watch.stop_deadline is None and time.monotonic() >= watch.limit_at:
            watch.timed_out = True
            log.info("job %s: time limit of %g s reached", self.job_id, plan.time_limit_s)
        if watch.stop_deadline is None and (watch.timed_out or self._asked_to_stop(handle)):
            grace_s = self.settings.cancel_grace_s
            log.info("job %s: stopping (final checkpoint, %.0f s grace)", self.job_id, grace_s)
            group.request_stop()
            watch.stop_deadline = time.monotonic() + grace_s
        if watch.stop_deadline is not None and time.monotonic() > watch.stop_deadline:
            group.kill()

    def _asked_to_stop(self, handle: JobHandle) -> bool:
        return handle.cancel.is_set() or handle.preempt.is_set() or self.runtime.stopping.is_set()

    def _outcome(
        self,
        group: RankGroup | CommandGroup,
        handle: JobHandle,
        plan: LaunchPlan,
        relay: EventRelay | None,
        watch: Watch,
    ) -> Outcome:
        """Timed out, queued again (preempted), cancelled (or the worker shut down), or what
        the ranks' exits say: succeeded, or failed as the rank that failed first tells."""
        if watch.timed_out:
            return Outcome(
                JobStatus.timeout,
                f"time limit of {plan.time_limit_s:g} s reached; "
                "stopped after its final checkpoint",
            )
        if watch.stop_deadline is not None:
            if handle.preempt.is_set() and not handle.cancel.is_set():
                return Outcome(JobStatus.queued)  # preempted: it waits again, to resume
            return Outcome(JobStatus.cancelled, self._stop_reason(handle))
        observe_exits(group.poll(), watch.exits)
        first = watch.first_failure
        if first is None:
            first = next((e for e in watch.exits if e.code != 0), None)
        if first is None:
            return Outcome(JobStatus.succeeded)
        if isinstance(group, CommandGroup) and group.memory_exceeded is not None:
            return Outcome(JobStatus.failed, self._memory_text(group.memory_exceeded, first))
        if (cause := self._memory_kill()) is not None:
            # The node's sampler killed a process of it for using more than its share of a
            # device (set only then): under torchrun the rank's SIGKILL reaches the worker as
            # the agent's plain exit 1, so the cause is read whatever the exit code.
            return Outcome(JobStatus.failed, f"{cause}\n{self._failure_text(relay, first)}")
        return Outcome(JobStatus.failed, self._failure_text(relay, first))

    def _memory_kill(self) -> str | None:
        """Why the sampler killed this job's processes (telemetry/enforce.py), or None."""
        try:
            return memory_kill_cause(self.runtime.redis, self.job_id)
        except redis.RedisError:
            log.warning("job %s: could not read its memory-kill cause", self.job_id)
            return None

    def _forward(self, group: RankGroup | CommandGroup) -> None:
        """Events the group reads from the job's files (a command job's metrics lines and
        checkpoints) go on the job's stream like the ranks' own."""
        for event_type, data in group.events():

            def publish(event_type: str = event_type, data: dict[str, Any] = data) -> None:
                send(self.runtime.redis, self.job_id, event_type, data)

            self._in_redis(f"publishing a {event_type} event", publish)

    def _stop_reason(self, handle: JobHandle) -> str | None:
        if handle.cancel.is_set():
            return None
        return "the worker was shut down; the job stopped after its final checkpoint"

    def _failure_text(self, relay: EventRelay | None, first: RankExit) -> str:
        """What the rank that failed first said: killed by a signal, its traceback, or its log.

        A rank killed by a signal publishes nothing, while its peers then fail in a collective
        with errors of their own: the signal is the cause, not their errors."""
        if first.code < 0:
            return (
                f"rank {first.rank} {first.how} (exit code {first.code}); "
                f"the end of its log:\n{self._log_tail(first.rank)}"
            )
        if relay is not None and relay.errors:
            error = min(relay.errors, key=lambda e: e.ts)
            return f"rank {error.rank} failed: {error.message}\n{error.traceback}".rstrip()
        saved = self.run_dir / f"rank{first.rank}.traceback"
        if saved.is_file():
            return f"rank {first.rank} failed:\n{saved.read_text()}"
        return f"rank {first.rank} {first.how}; the end of its log:\n{self._log_tail(first.rank)}"

    def _memory_text(self, reason: str, first: RankExit) -> str:
        """The memory verdict first (the job's one-line cause), then what the rank said."""
        saved = self.run_dir / f"rank{first.rank}.traceback"
        if saved.is_file():
            return saved.read_text()
        return f"{reason}\nthe end of its log:\n{self._log_tail(first.rank)}"

    def _log_tail(self, rank: int) -> str:
        path = self.run_dir / f"rank{rank}.log"
        if not path.is_file():
            return "(no log)"
        with path.open("rb") as fh:
            fh.seek(max(0, path.stat().st_size - LOG_TAIL_BYTES))
            return fh.read().decode(errors="replace")

    def _finish(self, outcome: Outcome | None, plan: LaunchPlan) -> None:
        if outcome is not None and outcome.status is JobStatus.queued:
            requeued = self._in_db(
                "putting it back in the queue", lambda s: runs.requeue_job(s, self.job_id)
            )
            if requeued is not None:
                log.info("job %s preempted: queued again, to resume", self.job_id)
                self._status(JobStatus.queued)
            return  # not expired: a follower hears its next start on the same stream key
        ended = None
        if outcome is None:  # it ended elsewhere: this node's ranks are now gone, say so
            self._in_db(
                "confirming its ranks are gone",
                lambda s: multinode.confirm_part(s, self.job_id, self.node),
            )
        if outcome is not None:
            ended = self._in_db(
                "recording its end",
                lambda s: multinode.finish_part(
                    s, self.job_id, self.node, outcome.status, error=outcome.error
                ),
            )
            if ended is not None:
                log.info("job %s %s", self.job_id, ended.status)
                self._status(JobStatus(ended.status), ended.error)
        if plan.leads or ended is not None:
            expire_stream(self.runtime.redis, self.job_id)

    def _status(self, status: JobStatus, error: str | None = None) -> None:
        data = status_data(status.value, error)
        self._in_redis(
            f"publishing status {status.value}",
            lambda: send(self.runtime.redis, self.job_id, "status", data),
        )
