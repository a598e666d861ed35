"""`make gpu-check` cannot rot between GPU machines: its dry run (every section on CPU, with
simulated devices and tiny shapes) runs here in full, and its report keeps other GPUs' blocks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench"
SCRIPT = BENCH / "gpu_check.py"
sys.path.insert(0, str(BENCH))

from gpucheck import report  # noqa: E402
from gpucheck.rows import Machine, Row  # noqa: E402


def _gpu_check(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        cwd=SCRIPT.parents[1] / "backend",
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.long
def test_the_dry_run_runs_every_section_and_writes_the_report(tmp_path: Path) -> None:
    out, results = tmp_path / "benchmarks-gpu.md", tmp_path / "results.json"
    done = _gpu_check("--out", str(out), "--json", str(results), GPU_CHECK_DRY_RUN="1")
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    sections = json.loads(results.read_text())["sections"]
    from gpu_check import SECTIONS

    assert list(sections) == [title for title, _, _ in SECTIONS.values()]
    for title, rows in sections.items():
        assert rows, f"{title}: no rows"
        assert not [r for r in rows if r["check"].endswith(": finished")], f"{title} crashed"
        assert all(r["figure"] for r in rows), title
    text = out.read_text()
    assert text.startswith(report.TITLE)
    assert all(f"### {title}" in text for title in sections)


def test_without_a_gpu_it_says_so_in_one_line_and_exits_0() -> None:
    done = _gpu_check()  # this machine has no NVIDIA driver
    assert done.returncode == 0
    assert done.stdout.startswith("gpu-check: no GPU to check here")
    assert len(done.stdout.strip().splitlines()) == 1


def _block(gpu: str, figure: str, when: date) -> str:
    machine = Machine(1, gpu, "580", "13.0", "2.11")
    rows = {"1. Telemetry": [Row("memory used", figure, "within 1 %", "pass")]}
    return report.render_block(machine, rows, when, "load 0.1/0.1")


def test_a_run_replaces_its_own_gpus_block_and_keeps_the_others() -> None:
    old_h100 = _block("NVIDIA H100", "0.1", date(2026, 1, 1))
    h200 = _block("NVIDIA H200", "0.2", date(2026, 2, 1))
    text = report.merge(report.merge("", old_h100), h200)
    new_h100 = _block("NVIDIA H100", "0.3", date(2026, 3, 1))
    text = report.merge(text, new_h100)
    assert text.index("NVIDIA H100, 2026-03-01") < text.index("NVIDIA H200, 2026-02-01")
    assert "2026-01-01" not in text and "| 0.2 |" in text and "| 0.3 |" in text
    assert text.count("<!-- /gpu-check -->") == 2
