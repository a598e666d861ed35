"""`gpudeck run` start-up: seconds from the command to a healthy API on a fresh machine (no
database or Redis configured: embedded ones are created), beside a restart on the same data
directory measured in the same run, and seconds from Ctrl-C to a clean exit with nothing left.

    .venv/bin/python bench/run_start.py
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def leftovers(marker: str) -> int:
    count = 0
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                blob = (entry / "cmdline").read_bytes() + (entry / "environ").read_bytes()
            except OSError:
                continue
            count += marker.encode() in blob
    return count


def start_and_stop(data_dir: Path) -> tuple[float, float, int]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUDECK_")}
    env.update(GPUDECK_DATA_DIR=str(data_dir), GPUDECK_PORT=str(port))
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "gpudeck", "run"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.05)
    healthy_s = time.monotonic() - started
    stopping = time.monotonic()
    process.send_signal(signal.SIGINT)
    process.wait(timeout=120)
    stop_s = time.monotonic() - stopping
    time.sleep(0.5)
    return healthy_s, stop_s, leftovers(str(data_dir))


def main() -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="gpudeck-run-bench-")) / "data"
    fresh = start_and_stop(data_dir)
    restart = start_and_stop(data_dir)
    print("                        healthy after   Ctrl-C to exit   processes left")
    print(f"fresh data directory    {fresh[0]:10.1f} s   {fresh[1]:11.1f} s   {fresh[2]:10d}")
    print(f"restart (baseline)      {restart[0]:10.1f} s   {restart[1]:11.1f} s   {restart[2]:10d}")
    print(
        f"fresh / restart: {fresh[0] / restart[0]:.2f}x; goal: healthy within 60 s -> "
        f"{'met' if fresh[0] <= 60 and fresh[2] == 0 and restart[2] == 0 else 'missed'}"
    )


if __name__ == "__main__":
    main()
