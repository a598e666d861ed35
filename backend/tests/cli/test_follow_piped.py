"""Following a job with its output piped (a script, CI): whole lines, a queued job's reason,
time from the job's start and the time its steps left need. The real command, a real API and,
where a job must run, a real worker. And help text as a terminal shows it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time

from cli_harness import Cli
from e2e_helpers import WorkerProcess

STEPS = json.dumps({"steps": 100, "step_sleep_s": 0.06})
# Past the worker's 10 s before a job's rate is measured (worker/relay.py RATE_WINDOW_S).
MEASURED = json.dumps({"steps": 200, "step_sleep_s": 0.07})


def job_id_of(stdout: str) -> int:
    return int(stdout.split()[1])  # "job 3 queued on ..."


def seconds(clock_text: str) -> int:
    h, m, s = (int(part) for part in clock_text.split(":"))
    return h * 3600 + m * 60 + s


def test_following_a_queued_job_piped_says_why_it_waits(cli: Cli) -> None:
    holder = job_id_of(cli("submit", "faulty", "--config", STEPS, "--gpus", "6").stdout)
    waiting = job_id_of(cli("submit", "faulty", "--config", STEPS, "--gpus", "6").stdout)
    followed: list[object] = []
    follow = threading.Thread(target=lambda: followed.append(cli("logs", str(waiting), "-f")))
    follow.start()
    time.sleep(3)  # it follows a job that waits: it must say so before anything ends
    cli("cancel", str(waiting))
    follow.join(60)
    cli("cancel", str(holder))
    [result] = followed
    lines = result.stderr.strip().splitlines()  # type: ignore[attr-defined]
    assert lines[0].startswith(f"job {waiting} queued (devices busy: "), lines
    assert f"held by job {holder}" in lines[0]
    assert lines[-1].startswith(f"job {waiting} cancelled"), lines


def test_a_piped_wait_ends_on_whole_lines_and_says_the_time_left(
    cli: Cli, worker: WorkerProcess
) -> None:
    done = cli("submit", "faulty", "--config", MEASURED, "--gpus", "4,5", "--wait")
    assert done.returncode == 0, done.stderr
    job = job_id_of(done.stdout)
    lines = done.stderr.strip().splitlines()
    assert lines[-1] == f"job {job} succeeded"
    # The bar's last figures, whole: it was cut at 80 columns ('30… 0:0…').
    assert re.fullmatch(rf"job {job} succeeded 200/200 0:00:\d\d elapsed", lines[-2]), lines
    running = [line for line in lines if f"job {job} running" in line]
    assert any(re.search(r", ~0:00:\d\d left", line) for line in running), lines


def test_following_counts_from_the_job_s_start(cli: Cli, worker: WorkerProcess) -> None:
    job = job_id_of(cli("submit", "faulty", "--config", STEPS, "--gpus", "2,3").stdout)
    while "running" not in cli("show", str(job)).stdout:
        time.sleep(0.2)
    time.sleep(3)
    followed = cli("logs", str(job), "--follow")
    assert followed.returncode == 0, followed.stderr
    found = re.search(r"100/100 (\d+:\d\d:\d\d) elapsed", followed.stderr)
    assert found and seconds(found.group(1)) >= 5, followed.stderr  # not since following


def test_help_is_wrapped_by_the_terminal_not_by_the_source() -> None:
    """Docstrings are wrapped by hand for the source; a command list showed those breaks."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GPUDECK_")}
    shown = subprocess.run(
        [sys.executable, "-m", "gpudeck", "--help"],
        env={**environ, "COLUMNS": "200"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    one_line = "with embedded PostgreSQL and Redis where no URLs are configured"
    assert one_line in shown.stdout, shown.stdout
    estimate = subprocess.run(
        [sys.executable, "-m", "gpudeck", "estimate", "--help"],
        env={**environ, "COLUMNS": "300"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    # One estimate places every job, simulated devices included: cpu is not theirs.
    assert "cpu for simulated devices" not in estimate.stdout
    assert "the one estimate every job is placed by, on simulated devices too" in estimate.stdout
