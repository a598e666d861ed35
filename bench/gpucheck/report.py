"""docs/benchmarks-gpu.md: one block per GPU model, newest first. A run replaces the block of
its own GPU model and leaves the figures of other GPUs in place with their dates."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import date
from pathlib import Path

from gpucheck.rows import Machine, Row

TITLE = "# GPU figures (`make gpu-check`)"
INTRO = """\
Written by `make gpu-check` (bench/gpu_check.py) on a machine with NVIDIA GPUs: each row is a
claim of docs/ turned into a measured figure, with the command that measured it, the goal and
the verdict. A run replaces the block of its own GPU model; the blocks of other GPUs stay with
their dates. How to run it, and what each section does: docs/benchmarks.md, "GPU check".
"""
_BLOCK = re.compile(r"<!-- gpu-check: (?P<key>.+?) -->\n.*?<!-- /gpu-check -->\n", re.S)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_block(
    machine: Machine,
    sections: Mapping[str, Sequence[Row]],
    when: date,
    load: str,
    note: str = "",
) -> str:
    key = f"{machine.gpus} x {machine.gpu_name}"
    lines = [
        f"<!-- gpu-check: {key} -->",
        f"## {key}, {when.isoformat()}",
        "",
        f"{machine.describe()}; {load} at the start.",
        "",
        *([note, ""] if note else []),
    ]
    for title, rows in sections.items():
        lines += [
            f"### {title}",
            "",
            "| check | figure | goal | verdict | command |",
            "|---|---|---|---|---|",
        ]
        for row in rows:
            cells = (
                row.check,
                row.figure,
                row.goal,
                row.verdict,
                f"`{row.command}`" if row.command else "",
            )
            lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
        lines.append("")
    lines.append("<!-- /gpu-check -->\n")
    return "\n".join(lines)


def merge(existing: str, block: str) -> str:
    """The document with `block` first and every other GPU's block kept, newest first."""
    key = _BLOCK.match(block)
    assert key is not None, "render_block makes a block"
    others = [m.group(0) for m in _BLOCK.finditer(existing) if m.group("key") != key.group("key")]
    return "\n".join([TITLE, "", INTRO, block, *others]).rstrip("\n") + "\n"


def write(path: Path, block: str) -> None:
    path.write_text(merge(path.read_text() if path.exists() else "", block))
