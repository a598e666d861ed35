"""A real `gpudeck run` for tests: start it on a fresh data directory, find its parts, and check
that nothing it started is left."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil


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


def running(processes: list[psutil.Process]) -> list[psutil.Process]:
    """Those of `processes` still running: not gone, not a zombie waiting to be reaped."""
    alive = []
    for process in processes:
        try:
            if process.status() != psutil.STATUS_ZOMBIE:
                alive.append(process)
        except psutil.NoSuchProcess:
            pass
    return alive


@dataclass
class GpudeckRun:
    process: subprocess.Popen[str]
    url: str
    data_dir: Path
    log_path: Path
    output: list[str] = field(default_factory=list)  # stdout: the first admin token, once

    def admin_token(self, timeout_s: float = 10) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for line in list(self.output):
                if line.strip().startswith("gpd_"):
                    return line.strip()
            time.sleep(0.05)
        raise AssertionError(f"gpudeck run printed no admin token: {self.output}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def part(self, name: str) -> psutil.Process:
        """The running `gpudeck <name>` child (or redis-server for "redis")."""
        for child in psutil.Process(self.process.pid).children():
            try:
                cmdline = child.cmdline()
            except psutil.NoSuchProcess:
                continue
            if cmdline[-2:] == ["gpudeck", name] or (
                name == "redis" and "redis-server" in cmdline[0]
            ):
                return child
        raise LookupError(f"no {name} part under gpudeck run")

    def postmaster(self) -> psutil.Process:
        pid = int((self.data_dir / "postgres" / "postmaster.pid").read_text().split()[0])
        return psutil.Process(pid)

    def wait_healthy(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        with httpx.Client(timeout=1) as http:  # one client: a new one costs 26 ms of CPU a try
            while True:
                assert self.process.poll() is None, f"gpudeck run exited:\n{self.log()[-4000:]}"
                try:
                    if http.get(f"{self.url}/api/health").status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                assert time.monotonic() < deadline, f"not healthy in {timeout_s} s:\n{self.log()}"
                time.sleep(0.2)


def start_gpudeck_run(data_dir: Path, port: int, log_path: Path, **settings: str) -> GpudeckRun:
    """`gpudeck run` with only the given GPUDECK_ settings (embedded Postgres and Redis)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUDECK_")}
    env.update(
        GPUDECK_DATA_DIR=str(data_dir),
        GPUDECK_PORT=str(port),
        GPUDECK_DEVICE_PROVIDER="simulated",
        GPUDECK_SIMULATED_DEVICES="2x16GiB",
        **settings,
    )
    with log_path.open("ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "gpudeck", "run"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
    run = GpudeckRun(process, f"http://127.0.0.1:{port}", data_dir, log_path)
    threading.Thread(target=lambda: run.output.extend(process.stdout or []), daemon=True).start()
    return run
