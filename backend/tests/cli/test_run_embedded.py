"""`gpudeck run` on a machine with no database or Redis configured: embedded ones start, the
API answers, data survives a restart, and Ctrl-C leaves no process behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from harness import auth_headers, free_port


def processes_mentioning(marker: str) -> list[int]:
    """PIDs whose command line or environment names `marker` (our data directory)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            blob = (entry / "cmdline").read_bytes() + (entry / "environ").read_bytes()
        except OSError:
            continue
        if marker.encode() in blob:
            found.append(int(entry.name))
    return found


def first_admin_token(output: list[str], timeout_s: float = 10) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for line in list(output):
            if line.strip().startswith("gpd_"):
                return line.strip()
        time.sleep(0.05)
    raise AssertionError(f"gpudeck run printed no admin token: {output}")


@contextmanager
def gpudeck_run(data_dir: Path, port: int) -> Iterator[tuple[str, float, list[str]]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUDECK_")}
    env.update(
        GPUDECK_DATA_DIR=str(data_dir),
        GPUDECK_PORT=str(port),
        GPUDECK_DEVICE_PROVIDER="simulated",
        GPUDECK_SIMULATED_DEVICES="2x16GiB",
    )
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "gpudeck", "run"], env=env, stdout=subprocess.PIPE, text=True
    )
    output: list[str] = []  # stdout, where the first run prints the admin token once
    threading.Thread(target=lambda: output.extend(process.stdout or []), daemon=True).start()
    url = f"http://127.0.0.1:{port}"
    try:
        while True:
            assert process.poll() is None, "gpudeck run exited early"
            try:
                if httpx.get(f"{url}/api/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() - started < 60, "not healthy within 60 s"
            time.sleep(0.2)
        yield url, time.monotonic() - started, output
    finally:
        process.send_signal(signal.SIGINT)  # what Ctrl-C delivers
        assert process.wait(timeout=60) == 0


def test_run_with_embedded_services_restarts_and_leaves_nothing(tmp_path: Path) -> None:
    data_dir = tmp_path / "gpudeck-data"
    port = free_port()
    with gpudeck_run(data_dir, port) as (url, seconds, output):
        assert seconds < 60
        headers = auth_headers(first_admin_token(output))
        body = {"kind": "sae", "config": {"batch_size": 64, "steps": 5}, "count": 1}
        job = httpx.post(f"{url}/api/jobs", json=body, timeout=30, headers=headers).json()
        assert processes_mentioning(str(data_dir))
    time.sleep(0.5)
    assert processes_mentioning(str(data_dir)) == []

    with gpudeck_run(data_dir, port) as (url, _, output):
        assert (
            httpx.get(f"{url}/api/jobs/{job['id']}", timeout=30, headers=headers).status_code == 200
        )
        assert not any("gpd_" in line for line in output)  # the token is printed only once
    time.sleep(0.5)
    assert processes_mentioning(str(data_dir)) == []
