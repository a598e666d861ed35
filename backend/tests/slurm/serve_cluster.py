"""The test cluster for the browser tests (frontend/e2e/board_slurm.mjs): starts it, prints its
slurm.conf and partition as one JSON line (or why it cannot start: `{"skip": ...}`), and stops it
when standard input closes or on SIGTERM, so the cluster goes with the process that asked for it.

    PYTHONPATH=backend/tests .venv/bin/python backend/tests/slurm/serve_cluster.py
"""

from __future__ import annotations

import json
import signal
import sys
from typing import NoReturn

from slurm.cluster import GPU_TYPE, PARTITION, missing_binaries, start_cluster


def _exit(signum: int, _frame: object) -> NoReturn:
    raise SystemExit(128 + signum)


def main() -> None:
    if why := missing_binaries():
        print(json.dumps({"skip": why}), flush=True)
        return
    signal.signal(signal.SIGTERM, _exit)
    cluster = start_cluster()
    try:
        facts = {"conf": str(cluster.conf), "partition": PARTITION, "gpu_type": GPU_TYPE}
        print(json.dumps(facts), flush=True)
        sys.stdin.read()  # until the caller closes it, or ends
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
