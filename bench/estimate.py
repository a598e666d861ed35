"""Time the memory estimate for the 302 M-parameter SAE (d_in 2304, d_sae 65536, batch 4096).

Cold = the first call in a fresh process (includes the fake-tensor trace); warm = the cached
answer. The common heuristic (params x bytes x 4 + batch x d_in x bytes x 2) is printed beside
the estimate's own step peak to show what it misses. Run: .venv/bin/python bench/estimate.py
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "backend"))

from gpudeck.kinds.sae import memory
from gpudeck.kinds.sae.config import SaeConfig

GiB = 1024**3
WARM_CALLS = 1000


def main() -> None:
    print(
        f"{'dtype':9} {'ranks':>5} {'cold s':>8} {'warm us':>8} {'estimate GiB':>13} "
        f"{'step peak GiB':>14} {'heuristic GiB':>14} {'heuristic err':>14}"
    )
    for dtype in ("float32", "bfloat16"):
        for world_size in (1, 2):
            config = SaeConfig(d_in=2304, d_sae=65536, batch_size=4096, dtype=dtype)
            start = time.perf_counter()
            estimate = memory.estimate_sae(config, world_size)
            cold_s = time.perf_counter() - start
            warm = []
            for _ in range(WARM_CALLS):
                start = time.perf_counter()
                memory.estimate_sae(config, world_size)
                warm.append(time.perf_counter() - start)
            heuristic = memory.heuristic_bytes(config, world_size)
            error = heuristic / estimate.peak_step_bytes - 1
            warm_us = statistics.median(warm) * 1e6
            total_gib, step_gib = (
                estimate.bytes_per_device / GiB,
                estimate.peak_step_bytes / GiB,
            )
            print(
                f"{dtype:9} {world_size:>5} {cold_s:>8.3f} {warm_us:>8.1f} {total_gib:>13.2f} "
                f"{step_gib:>14.2f} {heuristic / GiB:>14.2f} {error:>+14.1%}"
            )


if __name__ == "__main__":
    main()
