"""GPUDeck's side of one job running on a Slurm cluster, as a worker is for its own ranks.

Slurm's ranks (engine/srun.py) write their events to `events.<rank>.jsonl` and their output to
`rank<r>.log` (srun --output) in the job's run dir on the cluster's shared filesystem; they need
to reach nothing of GPUDeck's but that directory. The follower, in the process that runs the
executor's pass, forwards new event lines onto the job's Redis stream, where the same EventRelay
as on GPUDeck's own nodes stores metrics, progress and checkpoints and feeds the job's
WebSocket, and the same LogShipper stores every rank's output in Postgres.

A file offset advances only once its lines are on the stream: while Redis is down the lines
wait in the file. `close()` forwards the rest, drains the relay and ships the last log lines,
and answers the error the first failing rank reported, if one did.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

import redis
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.services.jobs.events import job_stream
from gpudeck.worker.log_shipper import LogShipper
from gpudeck.worker.relay import EventRelay

log = logging.getLogger(__name__)
FORWARD_S = 0.5
READ_BYTES = 4 * 1024 * 1024  # per file and pass


class SlurmFollower:
    def __init__(
        self,
        job_id: int,
        cluster: str,
        run_dir: Path,
        data_dir: Path,
        world_size: int,
        client: redis.Redis,
        sessions: sessionmaker[Session],
        log_store_bytes: int,
    ) -> None:
        self.job_id = job_id
        self.run_dir = run_dir
        self.client = client
        self.relay = EventRelay(job_id, client, sessions, data_dir, run_dir, world_size)
        self.shipper = LogShipper(
            job_id, cluster, run_dir, range(world_size), sessions, log_store_bytes
        )
        self.shipper.start()
        self._offsets: dict[Path, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._loop, name=f"gpudeck-slurm-{job_id}", daemon=True
        )
        self._thread.start()

    def close(self) -> str | None:
        """Everything the ranks wrote, stored; the first rank error's text, if any."""
        self._stop.set()
        self._thread.join()
        self._forward()
        self.relay.drain()
        self.shipper.close()
        if not self.relay.errors:
            return None
        first = min(self.relay.errors, key=lambda e: e.ts)
        return f"rank {first.rank} failed: {first.message}\n{first.traceback}".rstrip()

    def _loop(self) -> None:
        while not self._stop.wait(FORWARD_S):
            try:
                self._forward()
                self.relay.pump()
            except Exception:  # a bad line or a store hiccup must not end the following
                log.exception("job %s: following its Slurm ranks", self.job_id)

    def _forward(self) -> None:
        for path in sorted(self.run_dir.glob("events.*.jsonl")):
            offset = self._offsets.get(path, 0)
            with path.open("rb") as file:
                file.seek(offset)
                chunk = file.read(READ_BYTES)
            whole = chunk[: chunk.rfind(b"\n") + 1]  # a line still being written waits
            if not whole:
                continue
            try:
                pipe = self.client.pipeline(transaction=False)
                for line in whole.splitlines():
                    if line.strip():
                        pipe.xadd(job_stream(self.job_id), json.loads(line))
                pipe.execute()
            except redis.RedisError as exc:
                log.warning("job %s: events wait in %s: %s", self.job_id, path.name, exc)
                return
            self._offsets[path] = offset + len(whole)
