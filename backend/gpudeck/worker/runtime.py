"""One worker process's runtime: settings, database, Redis, the warm launcher, and the
heartbeat thread for this worker's jobs (lost jobs are reaped by `gpudeck scheduler`).

Celery's task (gpudeck.tasks.jobs) calls `current().run_job(job_id)` in a pool thread; ranks
start from the launcher's forkserver, never from a daemonic pool process.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from gpudeck.core.config import Settings
from gpudeck.core.db import make_sessionmaker, service_engine, transaction
from gpudeck.core.redis import sync_client
from gpudeck.engine.kinds import registry
from gpudeck.engine.launch import PRELOAD, Launcher
from gpudeck.services.runs import lifecycle as runs
from gpudeck.services.runs import multinode
from gpudeck.worker.log_shipper import ship_leftovers
from gpudeck.worker.runner import JobHandle, JobRunner

log = logging.getLogger(__name__)
_current: WorkerRuntime | None = None
LEFTOVERS_INTERVAL_S = 30.0
SETTLE_TIMEOUT_S = 15.0  # a killed rank group is gone in well under a second


def current() -> WorkerRuntime:
    if _current is None:
        raise RuntimeError("no worker runtime: start it with `gpudeck worker`")
    return _current


def install(runtime: WorkerRuntime | None) -> None:
    global _current
    _current = runtime


def preload_modules() -> list[str]:
    """PRELOAD plus each registered kind's train module, imported once by the forkserver."""
    modules = [kind.train.partition(":")[0] for kind in registry().values()]
    return [*PRELOAD, *modules]


class WorkerRuntime:
    def __init__(self, settings: Settings, launcher: Launcher | None = None) -> None:
        self.settings = settings
        self.engine = service_engine(settings, pool_size=10)
        self.sessionmaker = make_sessionmaker(self.engine)
        self.redis = sync_client(str(settings.redis_url))
        self.launcher = launcher or Launcher(preload_modules())
        self.stopping = threading.Event()
        self._closed = threading.Event()
        self._jobs: dict[int, JobHandle] = {}
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        self.launcher.warm_up()
        thread = threading.Thread(
            target=self._heartbeat_loop, name="gpudeck-heartbeat", daemon=True
        )
        thread.start()
        self._threads.append(thread)
        # The ends of logs a killed worker of this node left unshipped, once their jobs end.
        thread = threading.Thread(
            target=self._every,
            args=(LEFTOVERS_INTERVAL_S, self._ship_leftovers),
            name="gpudeck-log-leftovers",
            daemon=True,
        )
        thread.start()
        self._threads.append(thread)

    def _ship_leftovers(self) -> None:
        ship_leftovers(
            self.sessionmaker,
            self.settings.data_dir,
            self.settings.node_name,
            self.settings.log_store_bytes,
            skip=set(self.running_job_ids()),  # their runners ship their own
        )

    def begin_shutdown(self) -> None:
        """Running jobs stop gracefully (final checkpoint); their runners then return."""
        self.stopping.set()

    def close(self) -> None:
        self.stopping.set()
        self._closed.set()
        for thread in self._threads:
            thread.join(timeout=10)
        self.redis.close()
        self.engine.dispose()

    def run_job(self, job_id: int) -> None:
        if self.stopping.is_set():
            log.info("job %s not started: this worker is shutting down", job_id)
            return
        self.settle()
        JobRunner(self, job_id).run()

    def settle(self, timeout_s: float = SETTLE_TIMEOUT_S) -> None:
        """Before launching anything: learn which of this node's jobs ended elsewhere (a
        heartbeat now, not at the next beat) and wait until their ranks are killed. After a
        freeze or a partition this node's devices may already be another job's, which this
        launch may be: the old ranks go first."""
        try:
            self.heartbeat_once()
        except Exception as exc:  # the claim that follows needs the database too
            log.warning("could not settle this node's jobs before a launch: %s", exc)
            return
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            with self._lock:
                gone = [j for j, h in self._jobs.items() if h.gone.is_set()]
            if not gone:
                return
            time.sleep(0.02)
        log.error("jobs %s: their ranks still run %g s after they ended", gone, timeout_s)

    def track(self, job_id: int) -> JobHandle:
        with self._lock:
            return self._jobs.setdefault(job_id, JobHandle(job_id))

    def untrack(self, job_id: int) -> None:
        with self._lock:
            self._jobs.pop(job_id, None)

    def running_job_ids(self) -> list[int]:
        with self._lock:
            return list(self._jobs)

    def queued_job_ids(self) -> list[int]:
        with transaction(self.sessionmaker) as session:
            return runs.queued_job_ids(session, self.settings.node_name)

    def heartbeat_once(self) -> None:
        with self._lock:
            handles = dict(self._jobs)
        if not handles:
            return
        # This node's parts first, committed alone: a peer hung inside its own heartbeat holds
        # the job rows' locks (multinode.renew_parts), and the wait for them is bounded by a beat.
        with transaction(self.sessionmaker) as session:
            multinode.renew_parts(session, list(handles), self.settings.node_name)
        with transaction(self.sessionmaker) as session:
            pulses = runs.heartbeat(
                session, list(handles), lock_wait_s=self.settings.heartbeat_interval_s
            )
        for job_id, handle in handles.items():
            pulse = pulses.get(job_id)
            if pulse is None:
                handle.gone.set()
            elif pulse.cancel_requested_at is not None:
                handle.cancel.set()
            elif pulse.preempt_requested_at is not None:
                handle.preempt.set()

    def _heartbeat_loop(self) -> None:
        self._every(self.settings.heartbeat_interval_s, self.heartbeat_once)

    def _every(self, interval_s: float, action: Callable[[], object]) -> None:
        while not self._closed.wait(interval_s):
            try:
                action()
            except Exception as exc:  # a store outage: keep beating, the next one may pass
                log.warning(
                    "%s failed; retrying next interval: %s",
                    getattr(action, "__name__", action),
                    str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
                )
