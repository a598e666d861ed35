"""A stalled Redis (SIGSTOP for 20 s: a hang, not a crash) never hangs the API.

45 clients submit at once while it is stalled, and a probe reads GET /api/jobs (which needs no
Redis) and /api/health the whole time. Before: every submit waited out the stall (the broker
send had no socket timeout, redis-py retried each timed-out read), they held every request
thread, and GET /api/jobs timed out at 20 s. Now each submit is answered within 3 s (accepted,
its dispatch left to the outbox, or 503), the other routes answer as usual, and once Redis is
back the accepted jobs run: those placed at submit through the outbox, the first of those left
waiting through the scheduler's pass; the rest, still waiting, are cancelled, none of them lost
(running all 45 one after another cost CI two minutes and proved nothing more).

20 s: the burst is answered within its first 3 s, and the rest is the API's steady state under
a stall (the breaker's probe once a second, requests failing at once); the old behaviour (each
submit waiting out the stall) would still miss the 3 s bound by 15 s. The 40 s it stalled for
before repeated that steady state 20 more times."""

from __future__ import annotations

import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from chaos_helpers import TERMINAL, wait_job
from run_harness import GpudeckRun

# Among the suite's longest: started first (conftest.py).
pytestmark = pytest.mark.long

STALL_S = 20.0
SUBMITS = 45
TINY = {"d_in": 8, "d_sae": 16, "batch_size": 8, "steps": 2, "checkpoint_interval": 1000}
BODY = {"kind": "sae", "config": TINY, "count": 1}


def _timed(client: httpx.Client, method: str, path: str, **kwargs: object) -> tuple[float, int]:
    started = time.monotonic()
    try:
        status = client.request(method, path, **kwargs).status_code  # type: ignore[arg-type]
    except httpx.TimeoutException:
        status = 0  # no answer at all
    return time.monotonic() - started, status


def test_45_submits_through_a_20_s_redis_stall_are_answered_and_run(
    gpudeck: GpudeckRun, client: httpx.Client, log_on_failure: None
) -> None:
    first = client.post("/api/jobs", json=BODY)  # warm: the first submit traces the estimate
    assert first.status_code == 201, first.text
    wait_job(client, first.json()["id"], TERMINAL, timeout_s=120)
    redis_server = gpudeck.part("redis")
    reads: list[tuple[str, float, int]] = []
    done = threading.Event()

    def probe() -> None:
        with httpx.Client(base_url=gpudeck.url, headers=client.headers, timeout=20) as http:
            while not done.is_set():
                for path in ("/api/jobs", "/api/health"):
                    reads.append((path, *_timed(http, "GET", path)))
                done.wait(0.2)

    def submit(_: int) -> tuple[float, int, int | None, bool]:
        """(seconds, status, the job's id when accepted, whether it was placed at submit)"""
        with httpx.Client(base_url=gpudeck.url, headers=client.headers, timeout=20) as http:
            started = time.monotonic()
            try:
                answer = http.post("/api/jobs", json=BODY)
            except httpx.TimeoutException:
                return time.monotonic() - started, 0, None, False
            if answer.status_code != 201:
                return time.monotonic() - started, answer.status_code, None, False
            job = answer.json()
            return time.monotonic() - started, 201, job["id"], bool(job["devices"])

    prober = threading.Thread(target=probe, daemon=True)
    redis_server.send_signal(signal.SIGSTOP)
    stalled = time.monotonic()
    try:
        prober.start()
        time.sleep(2)  # the stall is under way before the burst
        with ThreadPoolExecutor(SUBMITS) as pool:
            submits = list(pool.map(submit, range(SUBMITS)))
        time.sleep(max(0.0, STALL_S - (time.monotonic() - stalled)))
    finally:
        redis_server.send_signal(signal.SIGCONT)
        done.set()
        prober.join()

    slowest = max(s[0] for s in submits)
    statuses = sorted({s[1] for s in submits})
    assert slowest <= 3.0 and set(statuses) <= {201, 503}, (slowest, statuses)
    jobs = sorted(r[1] for r in reads if r[0] == "/api/jobs")
    health = [r[1] for r in reads if r[0] == "/api/health"]
    assert all(r[2] == 200 for r in reads), [r for r in reads if r[2] != 200][:5]
    assert jobs[int(0.99 * (len(jobs) - 1))] <= 2.0, jobs[-5:]
    assert max(health) <= 1.0, sorted(health)[-5:]
    accepted = sorted(s[2] for s in submits if s[2] is not None)
    assert len(accepted) >= SUBMITS // 2, statuses  # a stall is not an outage of submits
    placed = sorted(s[2] for s in submits if s[2] is not None and s[3])
    waiting = [job_id for job_id in accepted if job_id not in placed]
    assert placed and waiting, (placed, waiting)  # both paths are exercised
    run = [*placed, waiting[0]]  # through the outbox; through the scheduler's pass
    for job_id in accepted:
        if job_id not in run:  # cancelled while they wait: none starts only to be stopped
            client.post(f"/api/jobs/{job_id}/cancel")  # 409 for one that has ended: fine
    for job_id in run:
        assert wait_job(client, job_id, TERMINAL, timeout_s=120)["status"] == "succeeded"
    ended = [wait_job(client, job_id, TERMINAL, timeout_s=60)["status"] for job_id in accepted]
    assert set(ended) <= {"succeeded", "cancelled"}, ended
