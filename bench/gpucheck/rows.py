"""What a section reports: rows of (check, command, figure, goal, verdict), and the machine."""

from __future__ import annotations

import json
import os
import platform
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

Verdict = Literal["pass", "FAIL", "info", "not run"]


@dataclass(frozen=True)
class Check:
    """How a section runs: on this machine's GPUs, or (dry run) on CPU with simulated devices
    and tiny shapes, so that every line of the script runs in `make test`."""

    dry_run: bool
    gpus: int  # real CUDA devices, or the simulated devices of a dry run
    work_dir: Path

    @property
    def device_type(self) -> Literal["cuda", "cpu"]:
        return "cpu" if self.dry_run else "cuda"

    @property
    def backend(self) -> str:
        return "gloo" if self.dry_run else "nccl"

    def pick(self, real: object, dry: object) -> object:
        return dry if self.dry_run else real

    def rank_counts(self, limit: int = 8) -> list[int]:
        """1, 2, 4, 8 ranks, as many as there are devices."""
        return [n for n in (1, 2, 4, 8) if n <= min(self.gpus, limit)]


@dataclass(frozen=True)
class Row:
    check: str
    figure: str
    goal: str
    verdict: Verdict
    command: str = ""
    data: dict[str, object] = field(default_factory=dict)  # raw numbers, for the JSON file

    @staticmethod
    def judged(
        check: str, figure: str, goal: str, ok: bool, command: str = "", **data: object
    ) -> Row:
        return Row(check, figure, goal, "pass" if ok else "FAIL", command, dict(data))

    @staticmethod
    def skipped(check: str, why: str, goal: str = "", command: str = "") -> Row:
        return Row(check, why, goal, "not run", command)


def save_rows(path: Path, rows: Sequence[Row]) -> None:
    path.write_text(json.dumps([asdict(row) for row in rows], default=str))


def load_rows(path: Path) -> list[Row]:
    return [Row(**row) for row in json.loads(path.read_text())]


@dataclass(frozen=True)
class Machine:
    gpus: int
    gpu_name: str
    driver: str
    cuda: str
    torch: str
    python: str = platform.python_version()
    cpus: int = len(os.sched_getaffinity(0))

    def describe(self) -> str:
        return (
            f"{self.gpus} x {self.gpu_name}, driver {self.driver}, CUDA {self.cuda}, "
            f"torch {self.torch}, Python {self.python}, {self.cpus} CPUs"
        )


def median_p90(values: Sequence[float]) -> tuple[float, float]:
    ordered = sorted(values)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]


def load_average() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.1f}/{five:.1f} on {len(os.sched_getaffinity(0))} CPUs"
