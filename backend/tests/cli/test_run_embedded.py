"""`gpudeck run` on a machine with no database or Redis configured: embedded ones start, the
API answers, data survives a restart, and Ctrl-C leaves no process behind: `gpudeck run`
returns only once every process it started is gone, so the check needs no grace period.

One test, two starts: a first start on a fresh data directory (initdb, the first admin token)
and a restart of it are what every check here needs, and each start of the whole `gpudeck
run` costs ~15 s of CPU (its API, worker, sampler, scheduler and stores); three tests with a
start of their own each took five starts for the same checks."""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
from cli_harness import Cli
from harness import auth_headers, free_port
from run_harness import GpudeckRun, processes_mentioning, running, start_gpudeck_run
from stores import remove_root, temp_root

# Among the suite's longest: started first (conftest.py).
pytestmark = pytest.mark.long
JOB = {"kind": "sae", "config": {"batch_size": 64, "steps": 5}, "count": 1}


@pytest.fixture
def run_root() -> Iterator[Path]:
    """Not pytest's tmp_path: pytest sets its base back to 0700 whenever another xdist worker
    starts, which shuts out the unprivileged user the embedded Postgres runs as under root."""
    root = temp_root()
    yield root
    remove_root(root)


@contextmanager
def gpudeck_run(data_dir: Path, port: int) -> Iterator[tuple[GpudeckRun, float]]:
    started = time.monotonic()
    run = start_gpudeck_run(data_dir, port, data_dir.parent / "run.log")
    try:
        run.wait_healthy(timeout_s=60)
        yield run, time.monotonic() - started
    finally:
        run.process.send_signal(signal.SIGINT)  # what Ctrl-C delivers
        assert run.process.wait(timeout=60) == 0, run.log()[-4000:]


def test_run_with_embedded_services_is_quiet_restarts_replaces_a_lost_token_and_leaves_nothing(
    run_root: Path,
) -> None:
    data_dir = run_root / "gpudeck-data"
    home = run_root / "home"
    home.mkdir()
    port = free_port()
    cli = Cli(f"http://127.0.0.1:{port}", None, home)
    with gpudeck_run(data_dir, port) as (run, seconds):
        assert seconds < 60
        headers = auth_headers(run.admin_token())
        _a_job_succeeds_and_twenty_requests(run, headers)
        made = _an_admin_token_through_the_running_servers_socket(run, cli)
        job = httpx.post(f"{run.url}/api/jobs", json=JOB, timeout=30, headers=headers).json()
        assert processes_mentioning(str(data_dir))  # stopped with that job just submitted
    assert processes_mentioning(str(data_dir)) == []  # the moment `gpudeck run` has returned
    _the_first_start_was_quiet(run)

    after = _an_admin_token_while_nothing_runs(cli, data_dir)
    with gpudeck_run(data_dir, port) as (run, _):
        url = f"{run.url}/api/jobs/{job['id']}"
        assert httpx.get(url, timeout=30, headers=headers).status_code == 200
        assert not any("gpd_" in line for line in run.output)  # the token is printed only once
        for token in (made, after):  # both sign in to a later start
            me = httpx.get(f"{run.url}/api/auth/me", headers=auth_headers(token), timeout=30)
            assert me.json()["name"] == "admin"
    assert processes_mentioning(str(data_dir)) == []
    assert "Traceback" not in run.log()  # stores stop after their users: no connection errors
    assert list(home.iterdir()) == []  # nothing made in $HOME


def _a_job_succeeds_and_twenty_requests(run: GpudeckRun, headers: dict[str, str]) -> None:
    posted = httpx.post(f"{run.url}/api/jobs", json=JOB, timeout=30, headers=headers)
    job: dict[str, Any] = posted.json()
    deadline = time.monotonic() + 120
    # One client: a new one a request cost 26 ms of CPU (its TLS context built each time).
    with httpx.Client(base_url=run.url, headers=headers, timeout=10) as http:
        while http.get(f"/api/jobs/{job['id']}").json()["status"] != "succeeded":
            assert time.monotonic() < deadline, run.log()
            time.sleep(0.2)
        for _ in range(20):  # requests that used to print an access log line each
            http.get("/api/gpus")


def _the_first_start_was_quiet(run: GpudeckRun) -> None:
    """Issue 18: most of `gpudeck run`'s output was access logs, database setup and a Celery
    warning, with the sign-in link buried; Ctrl-C printed Redis tracebacks."""
    printed = [line.rstrip("\n") for line in run.output if line.strip()]
    assert printed[0] == f"GPUDeck: {run.url}"
    assert printed[-1].startswith(f"Sign in: {run.url}/#token=gpd_")  # last, on its own line
    assert len(printed) == 5, printed  # the address, two lines on the token, it, the link
    # Start-up, a job, twenty requests, a token made through its socket and Ctrl-C: no access
    # log, database setup, Celery banner or warning, info line or traceback (a real warning,
    # e.g. a part restarted, may show).
    noise = ("HTTP/1.1", "pgserver", "initdb", "celery", "Celery", "SecurityWarning", " INFO ")
    noisy = [line for line in run.log().splitlines() if any(n in line for n in noise)]
    assert noisy == [] and "Traceback" not in run.log(), run.log()


def _an_admin_token_through_the_running_servers_socket(run: GpudeckRun, cli: Cli) -> str:
    """Issue 25: later starts print only the URL, and `gpudeck token create admin` refused
    without GPUDECK_DATABASE_URL: it never found the embedded database `gpudeck run` made. It
    uses the running server's socket, or starts that database for the command and stops it."""
    postmaster = run.postmaster().pid
    made = cli("token", "create", "admin", GPUDECK_DATA_DIR=str(run.data_dir))
    assert made.returncode == 0, made.stderr
    me = httpx.get(f"{run.url}/api/auth/me", headers=auth_headers(made.stdout.strip()))
    assert me.json()["name"] == "admin"
    assert run.postmaster().pid == postmaster  # the running server, not a second one
    return made.stdout.strip()


def _an_admin_token_while_nothing_runs(cli: Cli, data_dir: Path) -> str:
    """Issue 25, with no server running: the command starts the database and stops it."""
    after = cli("token", "create", "admin", GPUDECK_DATA_DIR=str(data_dir))
    assert after.returncode == 0, after.stderr
    assert processes_mentioning(str(data_dir)) == []  # started for the command, stopped after
    listed = cli("token", "list", GPUDECK_DATA_DIR=str(data_dir))
    assert listed.returncode == 0 and listed.stdout.count("admin") >= 3, listed
    return after.stdout.strip()


def test_a_killed_gpudeck_run_leaves_none_of_its_parts_running(run_root: Path) -> None:
    """`gpudeck run` SIGKILLed (the OOM killer, kill -9) cannot stop its parts, each in a
    session of its own: the kernel tells them (SIGTERM at their parent's death) and each stops
    itself. Before, they ran on headless: a browser test's run, SIGKILLed while it stopped,
    left its scheduler retrying a removed Postgres for an hour."""
    data_dir = run_root / "gpudeck-data"
    run = start_gpudeck_run(data_dir, free_port(), run_root / "run.log")
    try:
        run.wait_healthy(timeout_s=60)
        parts = [run.part(name) for name in ("scheduler", "api", "worker", "sampler")]
        run.process.kill()
        run.process.wait()
        deadline = time.monotonic() + 30
        while (left := running(parts)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert left == [], [p.cmdline() for p in left]
    finally:  # the stores (and anything a failed check left): the supervisor stops them no more
        for pid in processes_mentioning(str(data_dir)):
            with contextlib.suppress(psutil.NoSuchProcess):
                psutil.Process(pid).kill()
