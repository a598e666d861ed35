"""How long a `gpudeck` client command takes to start: `gpudeck --help` (every command module
loaded, none run), beside the bare interpreter and the interpreter loading only the CLI's own
libraries (typer, rich, httpx), measured in the same run. Median of --runs.

    .venv/bin/python bench/cli_start.py --runs 15
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

CASES = {
    "python -c pass (baseline)": [sys.executable, "-c", "pass"],
    "typer + rich + httpx (baseline)": [sys.executable, "-c", "import typer, rich, httpx"],
    "gpudeck --help": [sys.executable, "-m", "gpudeck", "--help"],
}


def seconds(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    medians = {}
    for _ in range(2):  # warm the page cache
        for argv in CASES.values():
            seconds(argv)
    samples: dict[str, list[float]] = {name: [] for name in CASES}
    for _ in range(runs):  # interleaved, so load changes hit every case alike
        for name, argv in CASES.items():
            samples[name].append(seconds(argv))
    for name, values in samples.items():
        medians[name] = statistics.median(values)
        print(f"{name:34s} median {medians[name] * 1000:6.0f} ms")
    libs = medians["typer + rich + httpx (baseline)"]
    print(f"gpudeck --help / its libraries alone: {medians['gpudeck --help'] / libs:.2f}x")


if __name__ == "__main__":
    main()
