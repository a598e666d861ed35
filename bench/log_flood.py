"""A log flood: 4 ranks of a script job print as fast as they can; nothing is lost and the API
stays responsive (issue 24, part 6).

    cd backend && PYTHONPATH=$PWD ../.venv/bin/python ../bench/log_flood.py [--seconds 30]

A real `gpudeck api` and `gpudeck worker` (Postgres, Redis), 4 simulated devices, a script job
of 4 ranks (torchrun) whose every rank writes fixed-width numbered lines in a tight loop for
`--seconds`, then one last line. Meanwhile a client reads GET /api/jobs, GET /api/jobs/{id}
and the newest 100 lines of rank 0's log every 50 ms. Baseline, same run: the same reads for
10 s before the job, on the idle server.

Checked at the end, for every rank:
- torchrun's own file and GPUDeck's rank log (`jobs/<id>/rank<r>.log`, which the log route
  and the WebSocket read) both hold exactly the bytes the rank wrote (every line is the same
  width, so the size says it) and end with its last line;
- the stored copy in Postgres (what an API on another machine serves, capped by
  GPUDECK_LOG_STORE_BYTES) is the file's start and its newest output, byte for byte, with one
  gap between them, and nothing missing when the log is under the cap;
- the log route's last line is the rank's last line.
Goal: API p99 <= 100 ms during the flood.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
from _server import bench_server, bench_worker
from script_jobs import script_settings
from sqlalchemy import create_engine, text

RANKS = 4
LINE_WIDTH = 106  # "rank R line NNNNNNNNNNNN " + 80 x's + newline
FLOOD = """\
import os, sys, time
rank, seconds = int(os.environ["RANK"]), float(sys.argv[1])
payload = "x" * 80
end = time.monotonic() + seconds
n = 0
while time.monotonic() < end:
    for _ in range(1000):
        n += 1
        sys.stdout.write(f"rank {rank} line {n:012d} {payload}\\n")
sys.stdout.write(f"rank {rank} last line {n:012d}\\n")
"""
TERMINAL = ("succeeded", "failed", "cancelled", "lost")


def probe(http: httpx.Client, job_id: int | None, stop: threading.Event) -> list[tuple[str, float]]:
    """(route, milliseconds) of each read, every 50 ms until `stop`."""
    paths = ["/api/jobs"]
    if job_id is not None:
        paths += [f"/api/jobs/{job_id}", f"/api/jobs/{job_id}/logs?rank=0&tail=100"]
    timings: list[tuple[str, float]] = []
    while not stop.wait(0.05):
        for path in paths:
            started = time.perf_counter()
            http.get(path).raise_for_status()
            timings.append((path, (time.perf_counter() - started) * 1000))
    return timings


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def last_line(path: Path) -> str:
    with path.open("rb") as fh:
        fh.seek(max(0, path.stat().st_size - 200))
        return fh.read().decode().splitlines()[-1]


def check_rank(path: Path, rank: int) -> tuple[int, str]:
    """(lines the rank wrote, its last line), after checking the file holds exactly them."""
    last = last_line(path)
    assert last.startswith(f"rank {rank} last line "), (path, last)
    lines = int(last.split()[-1])
    expected = lines * LINE_WIDTH + len(last) + 1
    assert path.stat().st_size == expected, (path, path.stat().st_size, expected)
    return lines, last


def check_stored(database_url: str, job_id: int, rank: int, path: Path, cap: int) -> str:
    """The stored copy: the file's start, one gap at most, its end; byte for byte."""
    engine = create_engine(database_url)
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT start_byte, data FROM job_log_chunks WHERE job_id = :j AND rank = :r "
                "ORDER BY seq"
            ),
            {"j": job_id, "r": rank},
        ).all()
    engine.dispose()
    size = path.stat().st_size
    gaps, position, kept = 0, 0, 0
    with path.open("rb") as fh:
        for start, data in rows:
            if start != position:
                gaps += 1
            fh.seek(start)
            assert fh.read(len(data)) == bytes(data), f"rank {rank}: chunk at {start} differs"
            position, kept = start + len(data), kept + len(data)
    assert position == size, f"rank {rank}: stored up to {position} of {size}"
    assert gaps <= 1 and (gaps == 0) == (size <= cap), (rank, gaps, size, cap)
    return f"{kept / 2**20:.1f} MiB kept of {size / 2**20:.0f} MiB, {gaps} gap"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=30.0)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="gpudeck-bench-flood-"))
    (root / "flood.py").write_text(FLOOD)
    data_dir = root / "data"
    load = os.getloadavg()
    with (
        bench_server(devices=f"{RANKS}x80GiB", extra_env=script_settings(root)) as server,
        bench_worker(server, root / "worker.log", {"GPUDECK_DATA_DIR": str(data_dir)}),
        httpx.Client(base_url=server.url, headers=server.headers, timeout=60) as http,
    ):
        stop = threading.Event()
        threading.Timer(10, stop.set).start()
        baseline = probe(http, None, stop)
        config = {
            "entrypoint": "flood.py",
            "args": [str(args.seconds)],
            "memory_per_device_bytes": 2**28,
        }
        body = {"kind": "script", "config": config, "devices": [{"index": i} for i in range(RANKS)]}
        created = http.post("/api/jobs", json=body)
        created.raise_for_status()
        job_id = created.json()["id"]
        stop = threading.Event()
        timings: list[tuple[str, float]] = []
        reader = threading.Thread(target=lambda: timings.extend(probe(http, job_id, stop)))
        reader.start()
        started = time.monotonic()
        while (job := http.get(f"/api/jobs/{job_id}").json())["status"] not in TERMINAL:
            time.sleep(0.5)
        ended_after = time.monotonic() - started
        stop.set()
        reader.join()
        assert job["status"] == "succeeded", job["error"]
        cap = int(server.env.get("GPUDECK_LOG_STORE_BYTES", 16 * 2**20))
        print(f"cores {len(os.sched_getaffinity(0))}, load before {load[0]:.2f}")
        print(f"job {job_id}: {RANKS} ranks x {args.seconds:.0f} s, ended {ended_after:.1f} s")
        total = 0
        for rank in range(RANKS):
            ours = data_dir / "jobs" / str(job_id) / f"rank{rank}.log"
            lines, last = check_rank(ours, rank)
            torchrun = next((data_dir / "jobs" / str(job_id)).rglob(f"attempt_0/{rank}/stdout.log"))
            assert check_rank(torchrun, rank) == (lines, last)
            served = http.get(f"/api/jobs/{job_id}/logs", params={"rank": rank, "tail": 1})
            assert served.text.splitlines()[-1] == last, served.text[-300:]
            stored = check_stored(server.database_url, job_id, rank, ours, cap)
            total += ours.stat().st_size
            print(
                f"rank {rank}: {lines:,} lines, {ours.stat().st_size / 2**20:.0f} MiB, all "
                f"in rank{rank}.log and the log route's last line; stored copy: {stored}"
            )
        rate = total / 2**20 / args.seconds
        print(f"written: {total / 2**20:.0f} MiB in all, {rate:.0f} MiB/s")
        for name, measured in (("idle (baseline)", baseline), ("during the flood", timings)):
            values = [ms for _, ms in measured]
            print(
                f"API reads {name}: n={len(values)} p50 {statistics.median(values):.1f} ms, "
                f"p99 {percentile(values, 0.99):.1f} ms, max {max(values):.1f} ms"
            )
        for route in dict.fromkeys(path for path, _ in timings):
            values = [ms for path, ms in timings if path == route]
            print(
                f"  {route}: p50 {statistics.median(values):.1f} ms, p99 "
                f"{percentile(values, 0.99):.1f} ms"
            )
        p99 = percentile([ms for _, ms in timings], 0.99)
        ratio = p99 / percentile([ms for _, ms in baseline], 0.99)
        verdict = "met" if p99 <= 100 else "NOT met"
        print(f"p99 during / idle: {ratio:.1f}x; goal p99 <= 100 ms: {verdict}")


if __name__ == "__main__":
    sys.exit(main())
