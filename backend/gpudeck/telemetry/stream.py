"""Where telemetry lives in Redis, and the contract with the worker about which PIDs are ours.

Keys (all per node, `<node>` = the sampler's `node_name`):

- `gpudeck:telemetry:<node>`  stream; one entry per sample, field `s` = a `NodeSample` as JSON.
  Capped with approximate trimming at `ceil(telemetry_history_s / sample_interval_s)` entries,
  so it always holds at least `telemetry_history_s` (>= 10 minutes) of samples.
- `gpudeck:telemetry:nodes`   set of node names that have a stream.
- `gpudeck:sampler:<node>`    hash: the sampler's health (last_sample_at, samples_total,
  errors_total, last_error, last_duration_s, source).
- `gpudeck:node:<node>:pids`  hash written by the worker: field = PID of a rank it started,
  value = `<job_id>:<rank>:<kind>` (rank empty for a process of the job that is no rank; an
  entry without its kind, written before kinds were, still reads). A process NVML lists is
  GPUDeck's when its PID, or an ancestor's, is a field here; every other process is external
  and marks its device externally busy.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import NamedTuple

import redis

STREAM_FIELD = "s"


class ManagedPid(NamedTuple):
    """A process GPUDeck started: its job, its rank (None for a process that is no rank) and the
    job's kind, so the per-process view can say "job 12, sae, rank 0" for a rank whose command
    line is only multiprocessing's forkserver."""

    job_id: int
    rank: int | None
    kind: str | None = None


NODES_KEY = "gpudeck:telemetry:nodes"


def stream_key(node: str) -> str:
    return f"gpudeck:telemetry:{node}"


def health_key(node: str) -> str:
    return f"gpudeck:sampler:{node}"


def pids_key(node: str) -> str:
    return f"gpudeck:node:{node}:pids"


def stream_maxlen(history_s: float, interval_s: float) -> int:
    return math.ceil(history_s / interval_s) + 1


# --- the worker's side of the PID contract -------------------------------------------------


def register_rank_pid(
    r: redis.Redis, node: str, pid: int, job_id: int, rank: int | None, kind: str | None = None
) -> None:
    """Call right after spawning a rank (before it touches a GPU, ideally); rank None for a
    process of the job that is no rank (a script job's guard: its ranks' ancestor)."""
    rank_text = "" if rank is None else str(rank)
    r.hset(pids_key(node), str(pid), f"{job_id}:{rank_text}:{kind or ''}")


def unregister_pids(r: redis.Redis, node: str, pids: Iterable[int]) -> None:
    """Call when the ranks have exited (every terminal state)."""
    fields = [str(p) for p in pids]
    if fields:
        r.hdel(pids_key(node), *fields)


def parse_pids(raw: dict[str, str]) -> dict[int, ManagedPid]:
    """`{pid: ManagedPid}`; malformed entries are ignored rather than trusted."""
    out: dict[int, ManagedPid] = {}
    for pid_text, value in raw.items():
        job_text, _, rest = value.partition(":")
        rank_text, _, kind = rest.partition(":")
        try:
            rank = int(rank_text) if rank_text else None
            out[int(pid_text)] = ManagedPid(int(job_text), rank, kind or None)
        except ValueError:
            continue
    return out


def managed_pids(r: redis.Redis, node: str) -> dict[int, ManagedPid]:
    return parse_pids(r.hgetall(pids_key(node)))  # type: ignore[arg-type]
