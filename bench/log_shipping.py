"""What shipping rank logs into Postgres costs (worker/log_shipper.py, docs/worker.md).

    cd backend && ../.venv/bin/python ../bench/log_shipping.py [--ranks 2 --seconds 10
        --rates 0.001 0.1 1 4]

Each rank is a process that appends 100-byte lines to its log file at a set rate (MB/s per
rank), as a training loop's prints and progress lines would; the worker's real LogShipper, in
this process, ships them into a real Postgres (the local server, else an embedded one). For
each rate: the shipper's CPU (this process runs nothing else) in ms per MB and as a share of a
core, Postgres's CPU, how long after the last line everything was stored (`close()`, as at a
job's end), and the bytes stored against the cap (`GPUDECK_LOG_STORE_BYTES` per rank).
Baseline, same run: the CPU the ranks spent writing those lines to their files.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
from sqlalchemy import text

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _server import NODE, _local_database, _prepare

from gpudeck.core.config import Settings
from gpudeck.core.db import make_engine, make_sessionmaker
from gpudeck.core.embedded import EmbeddedServices
from gpudeck.worker.log_shipper import LogShipper

# One rank: `rate` MB/s of 100-byte lines for `seconds`, written every 10 ms, line-buffered
# as a rank's stdout is (engine/launch._redirect_output).
WRITER = """
import sys, time
path, rate, seconds = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
out = open(path, "a", buffering=1)
start = time.monotonic(); written = 0; n = 0
while (now := time.monotonic()) - start < seconds:
    due = int((now - start) * rate * 1e6)
    while written + 100 <= due:
        n += 1
        out.write(f"step {n:>10} loss=0.123456 lr=0.000400 tokens/s=123456.7".ljust(99) + "\\n")
        written += 100
    time.sleep(0.01)
out.close()
"""


def _postgres_cpu() -> float:
    total = 0.0
    for proc in psutil.process_iter(["name"]):
        if proc.info["name"] == "postgres":
            try:
                times = proc.cpu_times()
                total += times.user + times.system
            except psutil.Error:
                pass
    return total


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(database_url: str, ranks: int, seconds: float, rates: list[float]) -> None:
    _prepare(database_url, "2x80GiB")
    engine = make_engine(database_url, pool_size=2)
    factory = make_sessionmaker(engine)
    cap = Settings.model_fields["log_store_bytes"].default
    print(
        f"{ranks} ranks, {seconds:.0f} s a rate, 100-byte lines, cap {cap / 2**20:.0f} MiB a rank"
    )
    for job_id, rate in enumerate(rates, start=1):
        with engine.begin() as conn:
            conn.execute(
                text(
                    "INSERT INTO jobs (id, name, kind, config, status, owner, node, world_size,"
                    " progress_step) VALUES (:id, 'logs', 'sae', '{}', 'running', 'bench',"
                    " :node, :ranks, 0)"
                ),
                {"id": job_id, "node": NODE, "ranks": ranks},
            )
        run_dir = Path(tempfile.mkdtemp(prefix="gpudeck-logs-"))
        shipper = LogShipper(job_id, NODE, run_dir, range(ranks), factory, cap)
        cpu0, pg0, kids0 = time.process_time(), _postgres_cpu(), _children_cpu()
        shipper.start()
        writers = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    WRITER,
                    str(run_dir / f"rank{r}.log"),
                    str(rate),
                    str(seconds),
                ]
            )
            for r in range(ranks)
        ]
        for writer in writers:
            writer.wait()
        ended = time.monotonic()
        shipper.close()
        lag = time.monotonic() - ended
        cpu = time.process_time() - cpu0
        pg = _postgres_cpu() - pg0
        writing = _children_cpu() - kids0
        written = sum((run_dir / f"rank{r}.log").stat().st_size for r in range(ranks))
        with engine.connect() as conn:
            stored = conn.execute(
                text("SELECT coalesce(sum(length(data)), 0) FROM job_log_chunks WHERE job_id = :j"),
                {"j": job_id},
            ).scalar_one()
        mb = written / 1e6
        print(
            f"  {rate:g} MB/s a rank: wrote {mb:.2f} MB, stored {stored / 1e6:.2f} MB;"
            f" shipper {cpu * 1e3:.0f} ms CPU ({cpu * 1e3 / mb:.1f} ms/MB,"
            f" {cpu / seconds:.1%} of a core), Postgres {pg * 1e3:.0f} ms"
            f" ({pg / seconds:.1%}); all stored {lag:.2f} s after the last line;"
            f" baseline, the ranks writing it: {writing * 1e3:.0f} ms"
            f" ({cpu / writing:.2f}x)"
        )
    engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--rates", type=float, nargs="+", default=[0.001, 0.1, 1.0, 4.0])
    args = parser.parse_args()
    embedded = EmbeddedServices(Path(tempfile.mkdtemp(prefix="gpudeck-bench-")))
    try:
        url = os.environ.get("GPUDECK_BENCH_DATABASE_URL") or _local_database()
        run(url or embedded.start_postgres(), args.ranks, args.seconds, args.rates)
    finally:
        embedded.stop()


if __name__ == "__main__":
    main()
