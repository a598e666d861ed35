"""CLI tests: the real `gpudeck` command against a real API (uvicorn) and a real worker."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from harness import live_server, register_devices
from sqlalchemy.orm import Session

from gpudeck.core.config import Settings
from gpudeck.engine import kinds

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))  # e2e_kinds, e2e_helpers
from cli_harness import Cli
from e2e_helpers import WorkerProcess, spawn_part, worker_env


@pytest.fixture
def cli_settings(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    monkeypatch.setenv("GPUDECK_KIND_MODULES", "e2e_kinds")  # the in-process API's registry
    kinds.registry.cache_clear()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    yield settings
    kinds.registry.cache_clear()


@pytest.fixture
def cli(
    cli_settings: Settings, db: Session, admin_token: str, redis_client: redis.Redis,
    tmp_path: Path,
) -> Iterator[Cli]:  # fmt: skip
    """The CLI signed in as admin, against a live API on eight simulated devices."""
    register_devices(db)
    home = tmp_path / "home"
    home.mkdir()
    with live_server(cli_settings) as url:
        yield Cli(url, admin_token, home)


@pytest.fixture
def worker(cli_settings: Settings, tmp_path: Path) -> Iterator[WorkerProcess]:
    """A real worker, and the node's sampler (it measures the jobs' peak memory)."""
    sampler = spawn_part(["sampler"], worker_env(cli_settings), tmp_path / "sampler.log")
    started = spawn_part(
        ["worker", "--concurrency", "4"], worker_env(cli_settings), tmp_path / "worker.log"
    )
    started.wait_ready()
    yield started
    started.stop(timeout_s=60)
    sampler.stop(timeout_s=30)
