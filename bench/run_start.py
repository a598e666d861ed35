"""`gpudeck run` start-up: seconds from the command to a healthy API on a fresh machine (no
database or Redis configured: embedded ones are created), beside a restart on the same data
directory measured in the same run, and seconds from Ctrl-C to a clean exit with nothing left.
Two moments: the API serving (health answers, 200 or 503 `warming`: `gpudeck run` prints the
URL) and ready (200, once its memory estimator and submit path are warm, api/warm_up.py).

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


def start_and_stop(data_dir: Path) -> tuple[float, float, float, int]:
    """(seconds to the API serving, to its health 200, Ctrl-C to exit, processes left)."""
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPUDECK_")}
    env.update(GPUDECK_DATA_DIR=str(data_dir), GPUDECK_PORT=str(port))
    started, serving = time.monotonic(), None
    process = subprocess.Popen(
        [sys.executable, "-m", "gpudeck", "run"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    while True:
        try:
            answer = httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=1)
            if serving is None and (answer.status_code == 200 or "warming" in answer.text):
                serving = time.monotonic() - started  # `gpudeck run` prints the URL now
            if answer.status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.05)  # also on 503 `warming` (the API warms up before it says ready)
    healthy_s = time.monotonic() - started
    stopping = time.monotonic()
    process.send_signal(signal.SIGINT)
    process.wait(timeout=120)
    stop_s = time.monotonic() - stopping
    time.sleep(0.5)
    return serving or healthy_s, healthy_s, stop_s, leftovers(str(data_dir))


def main() -> None:
    data_dir = Path(tempfile.mkdtemp(prefix="gpudeck-run-bench-")) / "data"
    fresh = start_and_stop(data_dir)
    restart = start_and_stop(data_dir)
    print("                        serving after   ready (200) after   Ctrl-C to exit   left")
    for name, (serving, ready, stop, left) in (("fresh data directory", fresh),
                                               ("restart (baseline)", restart)):  # fmt: skip
        print(f"{name:22} {serving:10.1f} s   {ready:14.1f} s   {stop:11.1f} s   {left:5d}")
    met = fresh[1] <= 60 and fresh[3] == 0 and restart[3] == 0
    print(
        f"fresh / restart: {fresh[1] / restart[1]:.2f}x; goal: healthy within 60 s -> "
        f"{'met' if met else 'missed'}"
    )


if __name__ == "__main__":
    main()
