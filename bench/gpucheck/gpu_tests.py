"""Section 7: the tests marked `gpu` (`pytest -m gpu`): the NVML adapter against the real
library, NCCL DDP equivalence, the estimate against max_memory_allocated, the sparse kernels on
CUDA. One row per test. The dry run only collects them (they need a GPU to run)."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

from gpucheck.rows import Check, Row

BACKEND = Path(__file__).resolve().parents[2] / "backend"


def gpu_test_files() -> list[str]:
    """The test modules that have gpu-marked tests: only they are collected, so that a module
    needing a dev tool the GPU machine lacks (grimp, schemathesis) cannot stop the run."""
    found = []
    for path in sorted((BACKEND / "tests").rglob("test_*.py")):
        text = path.read_text()
        if "mark.gpu" in text or "CPU_AND_CUDA" in text:
            found.append(str(path.relative_to(BACKEND)))
    return found


def run(check: Check) -> Iterator[Row]:
    report = check.work_dir / "gpu-tests.xml"
    # -p no:cacheprovider: the tree may be read-only; -n 0: one process, one GPU context. No gpu
    # test uses hypothesis or schemathesis: loading their plugins was a quarter of the
    # collection's CPU time (3-4 of 14 s on 2 busy cores).
    command = [sys.executable, "-m", "pytest", "-m", "gpu", "-q", "-p", "no:cacheprovider"]
    command += ["-p", "no:hypothesispytest", "-p", "no:schemathesis"]
    command += gpu_test_files()
    command += ["--collect-only"] if check.dry_run else ["-n", "0", f"--junitxml={report}"]
    done = subprocess.run(command, cwd=BACKEND, capture_output=True, text=True, timeout=170)
    print(done.stdout[-4000:], done.stderr[-2000:], flush=True)
    if check.dry_run:
        collected = [line for line in done.stdout.splitlines() if "::" in line]
        ok = done.returncode == 0 and bool(collected)
        figure = f"{len(collected)} collected (a dry run does not run them)"
        yield Row.judged("pytest -m gpu --collect-only", figure, "collects", ok, "pytest -m gpu")
        return
    if not report.exists():
        yield Row("pytest -m gpu", f"no report, exit code {done.returncode}", "runs", "FAIL")
        return
    for case in ET.parse(report).getroot().iter("testcase"):
        name = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        problem = case.find("failure")
        problem = problem if problem is not None else case.find("error")
        if problem is not None:
            message = (problem.get("message") or problem.text or "")[:300]
            yield Row(name, message, "passes", "FAIL", "pytest -m gpu")
        elif case.find("skipped") is not None:
            yield Row(name, "skipped", "passes", "FAIL", "pytest -m gpu")
        else:
            yield Row(name, f"passed in {float(case.get('time', 0)):.1f} s", "passes", "pass",
                      "pytest -m gpu")  # fmt: skip
