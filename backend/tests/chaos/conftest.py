"""One `gpudeck run` (embedded Postgres and Redis, simulated devices, short lease) shared by the
chaos tests, which run in file order and each leave it healthy for the next."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from harness import auth_headers, free_port
from run_harness import GpudeckRun, processes_mentioning, start_gpudeck_run
from stores import remove_root, temp_root

sys.path.insert(0, str(Path(__file__).resolve().parent))  # chaos_helpers
from chaos_helpers import HEARTBEAT_INTERVAL_S, LEASE_S

E2E_DIR = Path(__file__).resolve().parents[1] / "e2e"  # e2e_kinds, the kind the cases run


@pytest.fixture(scope="module")
def gpudeck() -> Iterator[GpudeckRun]:
    # Not under pytest's tmp_path: pytest sets its base back to 0700 whenever another xdist
    # worker starts, which shuts out the unprivileged user the embedded Postgres runs as.
    root = temp_root()
    run = start_gpudeck_run(
        root / "data",
        free_port(),
        root / "run.log",
        GPUDECK_HEARTBEAT_INTERVAL_S=str(HEARTBEAT_INTERVAL_S),
        GPUDECK_HEARTBEAT_LEASE_S=str(LEASE_S),
        GPUDECK_CANCEL_GRACE_S="10",
        GPUDECK_SAMPLE_INTERVAL_S="0.5",
        # The test kind the cases run (chaos_helpers.JOB_KIND), in every part: the API
        # validates its config, the worker's ranks run it.
        GPUDECK_KIND_MODULES="e2e_kinds",
        PYTHONPATH=os.pathsep.join([str(E2E_DIR), os.environ.get("PYTHONPATH", "")]),
    )
    try:
        run.wait_healthy(timeout_s=120)
        yield run
    finally:
        run.process.send_signal(signal.SIGINT)
        code = run.process.wait(timeout=120)
        left = processes_mentioning(str(root / "data"))
        log = run.log()[-6000:]
        remove_root(root)
        assert code == 0 and left == [], f"exit {code}, left {left}:\n{log}"


@pytest.fixture(scope="module")
def client(gpudeck: GpudeckRun) -> Iterator[httpx.Client]:
    headers = auth_headers(gpudeck.admin_token())
    # 30 s: the first submit traces the memory estimate, slow on a loaded 2-core machine.
    with httpx.Client(base_url=gpudeck.url, headers=headers, timeout=30) as http:
        yield http


@pytest.fixture
def log_on_failure(gpudeck: GpudeckRun, request: pytest.FixtureRequest) -> Iterator[None]:
    """The supervisor's and parts' log, printed when a chaos test fails."""
    start = len(gpudeck.log())
    yield
    report = getattr(request.node, "rep_call", None)
    if report is not None and report.failed:
        print(gpudeck.log()[start:][-8000:])


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    setattr(item, f"rep_{report.when}", report)
