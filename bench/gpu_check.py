"""`make gpu-check`: prove every GPU path on this machine and write the figures.

    cd backend && ../.venv/bin/python ../bench/gpu_check.py [--only telemetry,jobs]
        [--out ../docs/benchmarks-gpu.md] [--json results.json]
    GPU_CHECK_DRY_RUN=1 make gpu-check      # or --dry-run: every section on CPU, tiny shapes

It detects the GPUs through NVML, then runs each section (bench/gpucheck/<name>.py) in a
process of its own, under a time limit, so that one section that hangs or crashes costs only
its own rows and every section starts with a clean CUDA context. Each section reports rows of
(check, figure, goal, verdict, command); they are written to docs/benchmarks-gpu.md as each
section ends, so a run cut short keeps what it measured. On a machine without a GPU it says so
in one line and exits 0. The dry run (in `make test`) runs the same code on CPU with simulated
devices, gloo and tiny shapes, so the script cannot rot between GPU machines: its verdicts are
not judged, only that every section runs and reports.
Exit status: 1 when a section crashed or a check failed (a dry run: when a section crashed).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from datetime import date
from importlib.metadata import version
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "backend"))

from gpucheck import report
from gpucheck.rows import Check, Machine, Row, load_average, load_rows, save_rows

# name: (title, time limit in s on a GPU machine, in a dry run)
SECTIONS = {
    "telemetry": ("1. Telemetry: the sampler against nvidia-smi", 90, 90),
    "estimate": ("2. Memory estimate against the allocator and nvidia-smi", 150, 150),
    "jobs": ("3. Job start, and script jobs against plain torchrun", 200, 240),
    "scaling": ("4. DDP scaling of the SAE trainer", 120, 120),
    "kernels": ("5. Kernels: the sparse TopK step", 90, 90),
    "map_jobs": ("6. Map jobs: activation extraction", 180, 150),
    "gpu_tests": ("7. pytest -m gpu", 180, 90),
    "sharing": ("8. Sharing a device by memory: 4 packed SAE members", 420, 180),
}
DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks-gpu.md"


def detect(dry_run: bool) -> Machine | str:
    """This machine's GPUs, or why there are none."""
    if dry_run:  # torch's version without importing it here: each section imports its own
        return Machine(2, "simulated (dry run, CPU)", "-", "-", version("torch"))
    import pynvml
    import torch

    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return f"NVML did not initialise ({exc})"
    try:
        count = pynvml.nvmlDeviceGetCount()
        if count == 0:
            return "NVML sees no device"
        name = pynvml.nvmlDeviceGetName(pynvml.nvmlDeviceGetHandleByIndex(0))
        driver = pynvml.nvmlSystemGetDriverVersion()
    finally:
        pynvml.nvmlShutdown()
    if not torch.cuda.is_available():
        return f"NVML sees {count} GPU(s) but this torch ({torch.__version__}) has no CUDA"
    text = lambda v: v.decode() if isinstance(v, bytes) else str(v)  # noqa: E731
    return Machine(count, text(name), text(driver), str(torch.version.cuda), torch.__version__)


def run_section(name: str, check: Check, dry_run: bool) -> list[Row]:
    """The section in a child process; its rows, or one FAIL row saying how it ended."""
    title, real_limit, dry_limit = SECTIONS[name]
    limit = dry_limit if dry_run else real_limit
    rows_file = check.work_dir / f"{name}.rows.json"
    command = [
        sys.executable, __file__, "--section", name, "--rows", str(rows_file),
        "--gpus", str(check.gpus), "--work-dir", str(check.work_dir),
    ] + (["--dry-run"] if dry_run else [])  # fmt: skip
    print(f"== {title} (limit {limit} s)", flush=True)
    started = time.monotonic()
    try:
        # A session of its own: a timeout kills the section and every process it started.
        process = subprocess.Popen(command, start_new_session=True)
        code = process.wait(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        process.wait()
        rows = load_rows(rows_file) if rows_file.exists() else []
        return [
            *rows,
            Row(f"{name}: finished", f"stopped after {limit} s", f"<= {limit} s", "FAIL"),
        ]
    took = time.monotonic() - started
    if code != 0 or not rows_file.exists():
        return [Row(f"{name}: finished", f"exit code {code} after {took:.0f} s", "exit 0", "FAIL")]
    print(f"   {name} took {took:.0f} s", flush=True)
    return load_rows(rows_file)


def child(args: argparse.Namespace) -> None:
    check = Check(dry_run=args.dry_run, gpus=args.gpus, work_dir=Path(args.work_dir))
    module = importlib.import_module(f"gpucheck.{args.section}")
    rows: list[Row] = []
    for row in module.run(check):  # a generator: rows are saved as they come
        print(f"   {row.verdict:7} {row.check}: {row.figure}", flush=True)
        rows.append(row)
        save_rows(Path(args.rows), rows)
    save_rows(Path(args.rows), rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--dry-run", action="store_true", default=bool(os.environ.get("GPU_CHECK_DRY_RUN"))
    )
    parser.add_argument(
        "--only", default="", help="comma-separated sections: " + ",".join(SECTIONS)
    )
    parser.add_argument("--out", type=Path, help=f"the report (default: {DOCS}; none in a dry run)")
    parser.add_argument("--json", type=Path, help="also write every row with its raw numbers")
    parser.add_argument("--section", help=argparse.SUPPRESS)
    parser.add_argument("--rows", help=argparse.SUPPRESS)
    parser.add_argument("--gpus", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--work-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.section:
        child(args)
        return 0
    machine = detect(args.dry_run)
    if isinstance(machine, str):
        print(f"gpu-check: no GPU to check here: {machine}. (GPU_CHECK_DRY_RUN=1 runs it on CPU.)")
        return 0
    names = [n for n in (args.only.split(",") if args.only else SECTIONS) if n]
    if unknown := set(names) - set(SECTIONS):
        parser.error(f"unknown sections {sorted(unknown)}; choose from {', '.join(SECTIONS)}")
    out = args.out or (None if args.dry_run else DOCS)
    load = load_average()
    print(f"gpu-check on {machine.describe()}; {load}", flush=True)
    check = Check(args.dry_run, machine.gpus, Path(tempfile.mkdtemp(prefix="gpudeck-gpu-check-")))
    results: dict[str, list[Row]] = {}
    for name in names:
        results[SECTIONS[name][0]] = run_section(name, check, args.dry_run)
        in_order = {t: results[t] for t in sorted(results)}  # titles are numbered: 1. ... 7.
        block = report.render_block(machine, in_order, date.today(), load)
        if out:
            report.write(out, block)
        if args.json:
            every = {title: [asdict(r) for r in rows] for title, rows in results.items()}
            args.json.write_text(
                json.dumps({"machine": asdict(machine), "sections": every}, indent=1)
            )
    return _verdict(results, args.dry_run, out)


def _verdict(results: dict[str, list[Row]], dry_run: bool, out: Path | None) -> int:
    rows = [row for section in results.values() for row in section]
    crashed = [r for r in rows if r.check.endswith(": finished")]
    failed = [r for r in rows if r.verdict == "FAIL"]
    counts = {v: sum(r.verdict == v for r in rows) for v in ("pass", "FAIL", "info", "not run")}
    print(
        "gpu-check: "
        + ", ".join(f"{n} {v}" for v, n in counts.items())
        + (f"; written to {out}" if out else "")
    )
    for row in crashed if dry_run else failed:
        print(f"  FAIL {row.check}: {row.figure} (goal {row.goal})")
    return 1 if (crashed if dry_run else failed) else 0


if __name__ == "__main__":
    sys.exit(main())
