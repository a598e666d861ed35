"""Run one job on this node: claim it, launch its ranks, watch them, record the outcome.

The runner's loop relays events and watches the ranks; the runtime's heartbeat thread renews the
job's lease and tells the runner (through JobHandle) when a cancel was asked for or when the job
stopped being ours (reaped as lost).
"""

from __future__ import annotations

import logging
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import redis

from gpudeck.core.db import transaction
from gpudeck.models import JobStatus
from gpudeck.services import checkpoints, runs
from gpudeck.services.job_events import job_stream
from gpudeck.services.runs import LaunchPlan
from gpudeck.telemetry.stream import register_rank_pid, unregister_pids
from gpudeck.trainer.launch import DeviceType, LaunchRequest, RankGroup
from gpudeck.worker.events import expire_stream, publish_status
from gpudeck.worker.relay import EventRelay

if TYPE_CHECKING:
    from gpudeck.worker.runtime import WorkerRuntime

log = logging.getLogger(__name__)
FAIL_GRACE_S = 3.0  # the other ranks of a failed job sit in a collective: no final checkpoint
POLL_S = 0.2
LOG_TAIL_BYTES = 4000


@dataclass
class JobHandle:
    """Shared between a job's runner and the heartbeat thread."""

    job_id: int
    cancel: threading.Event = field(default_factory=threading.Event)
    gone: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True)
class Outcome:
    status: JobStatus
    error: str | None = None


def job_paths(data_dir: Path, job_id: int) -> tuple[Path, Path]:
    """(run dir with rank logs, checkpoint dir) of a job."""
    return data_dir / "jobs" / str(job_id), data_dir / "checkpoints" / str(job_id)


class JobRunner:
    def __init__(self, runtime: WorkerRuntime, job_id: int) -> None:
        self.runtime = runtime
        self.job_id = job_id
        self.settings = runtime.settings
        self.run_dir, self.checkpoint_dir = job_paths(self.settings.data_dir, job_id)

    def run(self) -> None:
        with transaction(self.runtime.sessionmaker) as session:
            plan = runs.claim_job(session, self.job_id, self.settings.node_name)
        if plan is None:
            log.info("job %s is not queued on this node; nothing to do", self.job_id)
            return
        # A stream left under this id (a database reset, Redis kept) must not feed this run.
        self.runtime.redis.delete(job_stream(self.job_id))
        self._status(JobStatus.starting)
        handle = self.runtime.track(self.job_id)
        group: RankGroup | None = None
        try:
            group = self.runtime.launcher.launch(self._request(plan))
            # The sampler tells GPUDeck's processes from external ones by these PIDs.
            for rank, process in enumerate(group.processes):
                register_rank_pid(
                    self.runtime.redis, self.settings.node_name, process.pid, self.job_id, rank
                )
            log.info(
                "job %s: %d ranks in group %d (%s start)",
                self.job_id,
                plan.world_size,
                group.pgid,
                "warm" if group.warm else "cold",
            )
            with transaction(self.runtime.sessionmaker) as session:
                running = runs.mark_running(session, self.job_id)
            if running:
                self._status(JobStatus.running)
            outcome = self._supervise(group, handle, plan.world_size)
        except Exception:
            log.exception("job %s: the worker failed while running it", self.job_id)
            outcome = Outcome(JobStatus.failed, "worker error:\n" + traceback.format_exc())
        finally:
            if group is not None:
                group.kill()  # whatever happened above, no process of the job survives
                group.close()
                self._unregister_pids(group)
            self.runtime.untrack(self.job_id)
        self._finish(outcome)

    def _unregister_pids(self, group: RankGroup) -> None:
        try:
            unregister_pids(
                self.runtime.redis, self.settings.node_name, [p.pid for p in group.processes]
            )
        except redis.RedisError:
            log.warning("job %s: could not unregister its rank PIDs", self.job_id, exc_info=True)

    def _request(self, plan: LaunchPlan) -> LaunchRequest:
        resume_from = None
        if plan.resume_from_job_id is not None:
            with transaction(self.runtime.sessionmaker) as session:
                found = checkpoints.newest_complete(
                    session, plan.resume_from_job_id, self.settings.data_dir
                )
            if found is None:
                raise RuntimeError(f"job {plan.resume_from_job_id} has no complete checkpoint")
            resume_from = str(found)
        spec = {
            "job_id": plan.job_id,
            "kind": plan.kind,
            "config": plan.config,
            "run_dir": str(self.run_dir),
            "data_dir": str(self.settings.data_dir),
            "checkpoint_dir": str(self.checkpoint_dir),
            "resume_from": resume_from,
            "events_redis_url": self.settings.redis_url,
            "events_stream": job_stream(plan.job_id),
            "keep_checkpoints": self.settings.keep_checkpoints,
        }
        device_type: DeviceType = "cuda" if plan.device_source == "nvml" else "cpu"
        return LaunchRequest(plan.job_id, self.run_dir, spec, device_type, plan.device_indices)

    def _supervise(self, group: RankGroup, handle: JobHandle, world_size: int) -> Outcome | None:
        relay = EventRelay(
            self.job_id,
            self.runtime.redis,
            self.runtime.sessionmaker,
            self.settings.data_dir,
            self.run_dir,
            world_size,
        )
        stop_deadline: float | None = None
        failed_first: int | None = None
        while not group.done:
            group.wait(POLL_S)
            relay.pump()
            if handle.gone.is_set():
                group.kill()
                relay.drain()
                return None  # reaped or finished elsewhere: the job is no longer ours
            if stop_deadline is None and (handle.cancel.is_set() or self.runtime.stopping.is_set()):
                log.info(
                    "job %s: stopping (final checkpoint, %.0f s grace)",
                    self.job_id,
                    self.settings.cancel_grace_s,
                )
                group.request_stop()
                stop_deadline = time.monotonic() + self.settings.cancel_grace_s
            if stop_deadline is not None and time.monotonic() > stop_deadline:
                group.kill()
            failures = [r for r, code in group.poll().items() if code != 0]
            if stop_deadline is None and failures and failed_first is None:
                failed_first = failures[0]
                group.stop(FAIL_GRACE_S)  # a rank raised: stop the others
        relay.drain()
        if stop_deadline is not None:
            return Outcome(JobStatus.cancelled, self._stop_reason(handle))
        codes = group.poll()
        if failed_first is None and all(code == 0 for code in codes.values()):
            return Outcome(JobStatus.succeeded)
        return Outcome(JobStatus.failed, self._failure_text(relay, codes, failed_first))

    def _stop_reason(self, handle: JobHandle) -> str | None:
        if handle.cancel.is_set():
            return None
        return "the worker was shut down; the job stopped after its final checkpoint"

    def _failure_text(self, relay: EventRelay, codes: dict[int, int], first: int | None) -> str:
        """The traceback of the rank that failed first (earliest error event), or its log."""
        if relay.errors:
            error = min(relay.errors, key=lambda e: e.ts)
            return f"rank {error.rank} failed:\n{error.traceback or error.message}"
        rank = first if first is not None else min(r for r, c in codes.items() if c != 0)
        code = codes.get(rank)
        saved = self.run_dir / f"rank{rank}.traceback"
        if saved.is_file():
            return f"rank {rank} failed:\n{saved.read_text()}"
        how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited {code}"
        return f"rank {rank} {how}; the end of its log:\n{self._log_tail(rank)}"

    def _log_tail(self, rank: int) -> str:
        path = self.run_dir / f"rank{rank}.log"
        if not path.is_file():
            return "(no log)"
        with path.open("rb") as fh:
            fh.seek(max(0, path.stat().st_size - LOG_TAIL_BYTES))
            return fh.read().decode(errors="replace")

    def _finish(self, outcome: Outcome | None) -> None:
        if outcome is None:
            expire_stream(self.runtime.redis, self.job_id)
            return
        with transaction(self.runtime.sessionmaker) as session:
            job = runs.finish_job(session, self.job_id, outcome.status, error=outcome.error)
        if job is not None:
            log.info("job %s %s", self.job_id, outcome.status.value)
            self._status(outcome.status, outcome.error)
        expire_stream(self.runtime.redis, self.job_id)

    def _status(self, status: JobStatus, error: str | None = None) -> None:
        publish_status(self.runtime.redis, self.job_id, status.value, error=error)
