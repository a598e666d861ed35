"""Carrying out the watchdog's decisions (telemetry/watchdog.py): say why, then kill.

The cause is published first, so that the worker, which sees its rank die of SIGKILL, finds it
already there (when Redis cannot take it, the kill goes ahead all the same):

- `gpudeck:job:<job_id>:memory_kill`  string: the cause text, exactly as the job's failure
  should read ("used 9.3 GiB of its 8.0 GiB reservation on node/2"). Set once (the first kill's
  cause wins) and kept for `MEMORY_KILL_TTL_S`.

Then SIGKILL goes to the job's processes on that device and their descendants, and to nothing
else: each PID is checked again, at the kill, to belong to the decided job (a registered PID or a
descendant of one), so a PID that ended and was reused since the sample is left alone. No wait
for the processes to go: the sampler's loop stays bounded; the worker sees its ranks end.
"""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable, Mapping

import psutil
import redis

from gpudeck.telemetry.processes import owner_of, parent_pid
from gpudeck.telemetry.stream import ManagedPid
from gpudeck.telemetry.watchdog import KillDecision

log = logging.getLogger(__name__)
MEMORY_KILL_TTL_S = 7 * 24 * 3600


def memory_kill_key(job_id: int) -> str:
    return f"gpudeck:job:{job_id}:memory_kill"


def memory_kill_cause(r: redis.Redis, job_id: int) -> str | None:
    """The worker's side: why the sampler killed this job's processes, or None."""
    value = r.get(memory_kill_key(job_id))
    if isinstance(value, bytes):  # a client without decode_responses
        return value.decode()
    return None if value is None else str(value)


def publish_cause(r: redis.Redis, decision: KillDecision) -> None:
    r.set(memory_kill_key(decision.job_id), decision.cause, nx=True, ex=MEMORY_KILL_TTL_S)


def kill_job_processes(
    decision: KillDecision,
    managed: Mapping[int, ManagedPid],
    parent_of: Callable[[int], int | None] = parent_pid,
) -> list[int]:
    """SIGKILL the decided job's processes on the device, with their descendants; the PIDs
    signalled."""
    killed: list[int] = []
    for pid in decision.pids:
        owner = owner_of(pid, managed, parent_of)
        if owner is None or owner.job_id != decision.job_id:
            continue  # no longer the job's (ended, PID reused): never a neighbour's
        try:
            process = psutil.Process(pid)
            family = [process, *process.children(recursive=True)]
        except psutil.Error:
            continue  # already gone
        for member in family:
            try:
                member.send_signal(signal.SIGKILL)
            except psutil.Error:
                continue
            killed.append(member.pid)
    return killed


def enforce(r: redis.Redis, decision: KillDecision, managed: Mapping[int, ManagedPid]) -> None:
    try:
        publish_cause(r, decision)
    except redis.RedisError:
        # The kill protects the neighbours; it must not wait on its explanation. The worker
        # then fails the job by the signal alone.
        log.exception("job %d: cannot publish its memory kill cause", decision.job_id)
    killed = kill_job_processes(decision, managed)
    log.warning("job %d %s: killed %s", decision.job_id, decision.cause, killed or "nothing")
