"""`gpudeck sweep submit --wait`, `show` and `cancel`: the real command, a real API, scheduler
and worker. The rank processes of the sweep's members are watched while it runs: never more
than max_parallel members' ranks alive at once."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cli_harness import Cli
from e2e_helpers import WorkerProcess, rank_alive, spawn_part, worker_env
from harness import auth_headers

from gpudeck.core.config import Settings

SAE = json.dumps({"d_in": 16, "d_sae": 64, "batch_size": 64, "steps": 30, "metrics_interval": 5})


@pytest.fixture
def scheduler(cli_settings: Settings, tmp_path: Path) -> Iterator[WorkerProcess]:
    started = spawn_part(["scheduler"], worker_env(cli_settings), tmp_path / "scheduler.log")
    yield started
    started.stop(timeout_s=30)


class RankWatch:
    """Every 20 ms: how many of the given jobs have a live rank process."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir, self.jobs, self.most = data_dir, [], 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _live(self, job_id: int) -> bool:
        try:
            record = json.loads((self.data_dir / "jobs" / str(job_id) / "launch.json").read_text())
        except (FileNotFoundError, ValueError):
            return False
        return any(rank_alive(p) for p in record["pids"])

    def _run(self) -> None:
        while not self._done.wait(0.02):
            self.most = max(self.most, sum(self._live(j) for j in list(self.jobs)))

    def __enter__(self) -> RankWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()


@pytest.mark.long  # among the suite's longest: started first (conftest.py)
def test_a_sweep_runs_at_most_max_parallel_members_and_shows_its_table(
    cli: Cli, worker: WorkerProcess, scheduler: WorkerProcess, cli_settings: Settings
) -> None:
    with RankWatch(cli_settings.data_dir) as watch:
        # The members' ids are known once the sweep exists: watch them from the first poll.
        def follow() -> None:
            deadline = time.monotonic() + 60
            headers = auth_headers(cli.token or "")
            # One client: a new one a request cost 26 ms of CPU, two a poll every 50 ms.
            with httpx.Client(base_url=cli.url, headers=headers, timeout=10) as http:
                while not watch.jobs and time.monotonic() < deadline:
                    for s in http.get("/api/sweeps").json():
                        got = http.get(f"/api/sweeps/{s['id']}")
                        watch.jobs = [m["job_id"] for m in got.json()["members"]]
                    time.sleep(0.05)

        threading.Thread(target=follow, daemon=True).start()
        done = cli(
            "sweep", "submit", "sae", "--config", SAE, "--grid", "k=2,4", "--grid",
            "lr=0.001,0.004", "--max-parallel", "2", "--name", "ks", "--wait",
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "4 members, at most 2 at once" in done.stdout
    assert "4 of 4 succeeded" in done.stderr
    # the wait ends on the members' results, as `sweep show` prints them
    assert done.stdout.count("succeeded") >= 4 and "rank correlation" in done.stdout, done.stdout
    assert len(watch.jobs) == 4 and 1 <= watch.most <= 2, (watch.jobs, watch.most)
    sweep_id = done.stdout.split()[1]

    shown = cli("sweep", "show", sweep_id)
    assert shown.returncode == 0, shown.stderr
    cells = [line.split("│")[1:-1] for line in shown.stdout.splitlines() if "│" in line]
    rows = [[c.strip() for c in row] for row in cells]
    assert [(r[2], r[3], r[4]) for r in rows] == [
        (k, lr, "succeeded") for k in ("2", "4") for lr in ("0.001", "0.004")
    ], shown.stdout
    as_json = json.loads(cli("sweep", "show", sweep_id, "--json").stdout)
    assert all(m["metrics"] for m in as_json["members"])  # each member's newest metrics
    # the table carries explained variance, and the analysis names the best member by job
    metric = as_json["analysis"]["metric"]
    assert metric.endswith("explained_variance") and metric in shown.stdout
    best = as_json["analysis"]["best_job_id"]
    assert f"(job {best}) at" in shown.stdout and "rank correlation" in shown.stdout


def test_cancelling_a_sweep_stops_every_member(
    cli: Cli, worker: WorkerProcess, scheduler: WorkerProcess
) -> None:
    long = json.loads(SAE) | {"steps": 100_000, "checkpoint_interval": 100_000}
    started = cli(
        "sweep", "submit", "sae", "--config", json.dumps(long), "--grid", "k=2,4,8",
        "--max-parallel", "1",
    )  # fmt: skip
    sweep_id = started.stdout.split()[1]
    deadline = time.monotonic() + 60
    while "running" not in cli("sweep", "show", sweep_id).stdout:
        assert time.monotonic() < deadline, "no member started"
        time.sleep(0.3)
    cancelled = cli("sweep", "cancel", sweep_id)
    assert cancelled.returncode == 0, cancelled.stderr
    said = "2 waiting members cancelled, 1 running asked to stop after a final checkpoint"
    assert said in cancelled.stdout, cancelled.stdout
    deadline = time.monotonic() + 60
    while True:
        members = json.loads(cli("sweep", "show", sweep_id, "--json").stdout)["members"]
        if all(m["status"] == "cancelled" for m in members):
            break
        assert time.monotonic() < deadline, members
        time.sleep(0.3)
