"""The pure scheduling pass where sharing jobs preempt sharing jobs packed many to a device:
the time of one `plan()` with this checkout's victim choice beside a base revision's, in the
same run (each in its own process, alternating).

8 devices of 76 usable GiB, each packed with 16 preemptible sharing jobs of priority 0 (2 to 7
GiB, 72 GiB in all, 4 free; or 4 jobs of 7 to 30 GiB), and a queue of 24 sharing jobs of
priority 5 needing 8 to 30 GiB: each must stop some jobs on some device. Each running job has
run 0 to 60 minutes since its last checkpoint (spread by its id, the same in both trees; a tree
whose `Holding` has no `unsaved_s` chooses without it). Prints each pass's median and worst
time, its median CPU time (steadier on a shared machine), how many jobs it stopped, the GiB
they reserved and the device-minutes of work they lose.

    .venv/bin/python bench/share_preempt.py [--base HEAD] [--repeats 30] [--per-device 16]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GiB = 1024**3
NOW = 1000.0


SIZES_GIB = {  # the jobs on each device, 72 GiB in all
    16: [2, 3, 4, 5, 6, 7, 2, 3, 4, 5, 6, 7, 5, 5, 4, 4],
    4: [30, 20, 15, 7],
}


def unsaved_s(job_id: int) -> float:
    """The seconds job `job_id` has run since its last checkpoint: 0 to 60 minutes, spread."""
    return float(job_id * 7919 % 3600)


def measure(repeats: int, per_device: int) -> dict[str, object]:
    """Run in a child whose sys.path starts at the backend to measure."""
    from dataclasses import fields

    from gpudeck.services.queue.plan import Dev, Holding, Waiting, plan

    knows_lost_work = "unsaved_s" in {f.name for f in fields(Holding)}
    sizes = SIZES_GIB[per_device]
    devices, holding = [], []
    for d in range(8):
        ids = [100 * (d + 1) + j for j in range(len(sizes))]
        lost = [{"unsaved_s": unsaved_s(i)} if knows_lost_work else {} for i in ids]
        jobs = [
            Holding(i, "ada", (("n", f"u{d}"),), NOW + 3600, priority=0, preemptible=True,
                    share_bytes=n * GiB, **more)
            for i, n, more in zip(ids, sizes, lost, strict=True)
        ]  # fmt: skip
        holding += jobs
        devices.append(
            Dev("n", f"u{d}", d, holder=jobs[0].id, capacity_bytes=76 * GiB,
                shared_bytes=72 * GiB, share_owners=frozenset({"ada"}), shareable=True)
        )  # fmt: skip
    needs = [8, 12, 16, 20, 24, 30]
    waiting = [
        Waiting(
            i,
            "ada",
            "n",
            1,
            float(i),
            600.0,
            priority=5,
            share_bytes=needs[i % 6] * GiB,
        )
        for i in range(1, 25)
    ]
    times, cpu_times, out = [], [], None
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        out = plan(devices, holding, waiting, now=NOW)
        times.append(time.perf_counter() - t0)
        cpu_times.append(time.process_time() - c0)
    assert out is not None
    stopped = [v for v, _ in out.preempts]
    gib = sum(h.share_bytes or 0 for h in holding if h.id in set(stopped)) / GiB
    lost_min = sum(unsaved_s(h.id) * len(h.devices) for h in holding if h.id in set(stopped)) / 60
    return {"median_ms": round(statistics.median(times) * 1e3, 2),
            "max_ms": round(max(times) * 1e3, 2),
            "cpu_median_ms": round(statistics.median(cpu_times) * 1e3, 2),
            "preempting": len({j for _, j in out.preempts}), "victims": len(stopped),
            "stopped_gib": gib, "lost_device_min": round(lost_min, 1)}  # fmt: skip


def child(backend: Path, repeats: int, per_device: int) -> dict[str, object]:
    code = (
        f"import sys, json; sys.path.insert(0, {str(backend)!r}); sys.path.insert(0, "
        f"{str(REPO / 'bench')!r}); import share_preempt as b; "
        f"print(json.dumps(b.measure({repeats}, {per_device})))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    args = argparse.ArgumentParser()
    args.add_argument("--base", default="HEAD")
    args.add_argument("--repeats", type=int, default=30)
    args.add_argument("--rounds", type=int, default=3)
    args.add_argument("--per-device", type=int, choices=sorted(SIZES_GIB), default=16)
    opts = args.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", str(REPO), "archive", opts.base, "backend/gpudeck"],
                                 capture_output=True, check=True).stdout  # fmt: skip
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        trees = {opts.base: Path(tmp) / "backend", "this checkout": REPO / "backend"}
        for r in range(opts.rounds):
            for name, tree in trees.items():
                found = child(tree, opts.repeats, opts.per_device)
                print(f"round {r + 1} {name:>14} ({opts.per_device} a device): {found}", flush=True)


if __name__ == "__main__":
    main()
