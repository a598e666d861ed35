"""Chaos under a real `gpudeck run`: during a running 2-rank job, kill one process of
GPUDeck (or pause Postgres) and check what a user depends on afterwards.

The cases share one `gpudeck run` and run in file order; each leaves GPUDeck healthy (the
supervisor restarted what was killed) and its job ended, so the next starts from a clean state.
"""

from __future__ import annotations

import signal
import time

import httpx
import psutil
from chaos_helpers import (
    LEASE_S,
    TERMINAL,
    assert_answers_or_503,
    assert_job_cleaned_up,
    assert_no_record_lost,
    outage,
    ranks,
    sigkill,
    start_job,
    stop_job,
    wait_job,
    wait_restarted,
)
from run_harness import GpudeckRun, running

JOBS: list[int] = []  # every job the suite submitted: none may disappear


def _start(gpudeck: GpudeckRun, client: httpx.Client) -> tuple[int, dict, list[psutil.Process]]:
    job_id, record = start_job(gpudeck, client)
    JOBS.append(job_id)
    return job_id, record, ranks(record)


def _still_running(client: httpx.Client, job_id: int, for_s: float) -> None:
    """The job keeps running (and stepping) for `for_s` seconds."""
    before = wait_job(client, job_id, {"running"}, timeout_s=5)["progress"]["step"]
    time.sleep(for_s)
    after = wait_job(client, job_id, {"running"}, timeout_s=5)["progress"]["step"]
    assert after > before, f"job {job_id} stopped stepping at {before}"


def test_sampler_killed_is_restarted_and_the_job_runs_on(
    gpudeck: GpudeckRun, client: httpx.Client, log_on_failure: None
) -> None:
    job_id, record, rank_processes = _start(gpudeck, client)
    sampler = gpudeck.part("sampler")
    sigkill(sampler)
    wait_restarted(gpudeck, "sampler", sampler.pid)
    _still_running(client, job_id, 2)
    assert stop_job(client, job_id)["status"] == "cancelled"
    assert_job_cleaned_up(client, job_id, record, rank_processes)


def test_api_killed_is_restarted_and_the_job_runs_on(
    gpudeck: GpudeckRun, client: httpx.Client, log_on_failure: None
) -> None:
    job_id, record, rank_processes = _start(gpudeck, client)
    api = gpudeck.part("api")
    sigkill(api)
    wait_restarted(gpudeck, "api", api.pid)
    gpudeck.wait_healthy(timeout_s=60)
    _still_running(client, job_id, 2)
    assert stop_job(client, job_id)["status"] == "cancelled"
    assert_job_cleaned_up(client, job_id, record, rank_processes)


def test_rank_killed_fails_the_job_naming_the_rank(
    gpudeck: GpudeckRun, client: httpx.Client, log_on_failure: None
) -> None:
    job_id, record, rank_processes = _start(gpudeck, client)
    sigkill(rank_processes[1])
    final = wait_job(client, job_id, TERMINAL, timeout_s=30)
    assert final["status"] == "failed" and final["error"], final
    assert "rank" in final["error"], final["error"]
    assert_job_cleaned_up(client, job_id, record, rank_processes)


def test_worker_killed_job_is_lost_within_the_lease_and_nothing_of_it_is_left(
    gpudeck: GpudeckRun, client: httpx.Client, log_on_failure: None
) -> None:
    job_id, record, rank_processes = _start(gpudeck, client)
    worker = gpudeck.part("worker")
    forkservers = [p for p in worker.children() if "forkserver" in " ".join(p.cmdline())]
    assert forkservers
    sigkill(worker)
    killed_at = time.monotonic()
    psutil.wait_procs([*forkservers, *rank_processes], timeout=5)
    assert running([*forkservers, *rank_processes]) == []  # none outlives its worker
    final = wait_job(client, job_id, TERMINAL, timeout_s=LEASE_S + 20)
    assert time.monotonic() - killed_at < LEASE_S + 10
    assert final["status"] == "lost" and "heartbeat" in final["error"], final
    assert_job_cleaned_up(client, job_id, record, rank_processes)
    wait_restarted(gpudeck, "worker", worker.pid)


def test_redis_killed_is_restarted_and_the_api_answers_503_meanwhile(
    gpudeck: GpudeckRun, client: httpx.Client, log_on_failure: None
) -> None:
    job_id, record, rank_processes = _start(gpudeck, client)
    redis_server = gpudeck.part("redis")
    with outage(client, assert_answers_or_503) as probe:
        sigkill(redis_server)
        wait_restarted(gpudeck, "redis", redis_server.pid)
    _settle_then_end(client, job_id)
    assert_job_cleaned_up(client, job_id, record, rank_processes)
    probe.assert_ok()


def test_postgres_paused_for_10_s_does_not_lose_the_running_job(
    gpudeck: GpudeckRun, client: httpx.Client, log_on_failure: None
) -> None:
    job_id, record, rank_processes = _start(gpudeck, client)
    postmaster = gpudeck.postmaster()
    paused = [postmaster, *postmaster.children()]
    with outage(client, assert_answers_or_503) as probe:
        for process in paused:  # the postmaster first: no new backend while we stop the rest
            process.send_signal(signal.SIGSTOP)
        time.sleep(10)  # longer than the lease: a reaper counting it would reap the job
        for process in paused:
            process.send_signal(signal.SIGCONT)
    _still_running(client, job_id, LEASE_S + 3)  # the reaper's lease of contact has passed
    assert stop_job(client, job_id)["status"] == "cancelled"
    assert_job_cleaned_up(client, job_id, record, rank_processes)
    probe.assert_ok()  # needs the API's bounded store timeouts and 503 handlers


def test_postgres_killed_is_restarted_and_the_job_is_not_lost(
    gpudeck: GpudeckRun, client: httpx.Client, log_on_failure: None
) -> None:
    job_id, record, rank_processes = _start(gpudeck, client)
    postmaster = gpudeck.postmaster()
    with outage(client, assert_answers_or_503) as probe:
        sigkill(postmaster)
        wait_restarted(gpudeck, "postgres", postmaster.pid, timeout_s=60)
    _settle_then_end(client, job_id)
    assert_job_cleaned_up(client, job_id, record, rank_processes)
    assert_no_record_lost(client, JOBS)
    probe.assert_ok()


def _settle_then_end(client: httpx.Client, job_id: int) -> None:
    """After a store came back, the job either ran on (then it is cancelled) or failed with a
    reason; its worker is alive, so it is never `lost`."""
    time.sleep(LEASE_S + 2)
    current = wait_job(client, job_id, {"running", *TERMINAL}, timeout_s=30)
    if current["status"] == "running":
        current = stop_job(client, job_id)
        assert current["status"] == "cancelled", current
    else:
        assert current["status"] == "failed" and current["error"], current
