"""Wheels of GPUDeck and its runtime dependencies for a GPU machine without network access, so
that `make gpu-check` runs there from a carried folder (docs/benchmarks.md, "GPU check").

    .venv/bin/python bench/scripts/offline_wheels.py --out .whl [--present present.txt]
        [--python-version 3.12]

Walks gpudeck's own requirements (not its dev extras) through the installed distributions of
this venv, pins each to the version installed here, leaves out what the GPU machine's image
already has (`--present`: one distribution name a line) and the CUDA stack that comes with its
torch (torch, triton, nvidia-*), downloads each as a binary wheel for the target Python on
manylinux x86-64, and builds gpudeck's own wheel (its entry points name the built-in kinds).
On the GPU machine:

    python3 -m pip install --no-index --no-deps --target /tmp/site .whl/*.whl
    PYTHONPATH=/tmp/site python3 bench/gpu_check.py ...   (from backend/)

A first run there once lacked opentelemetry-api, which FastAPI imports but no list of
"packages the project names" held: this walk follows every requirement, so none is missed.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
# The GPU machine's torch brings these, built for its CUDA; a CPU build from here would not do.
CUDA_STACK = re.compile(r"^(torch|triton|nvidia-.*|cuda-.*)$")
PLATFORMS = [f"manylinux_2_{n}_x86_64" for n in (17, 24, 27, 28, 31, 34, 35)] + [
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
    "manylinux_2_5_x86_64",
]


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def runtime_closure(present: set[str], root: str = "gpudeck") -> dict[str, str]:
    """name -> installed version for every distribution gpudeck needs at run time here and the
    target lacks; a distribution the target has brings its own needs there."""
    found: dict[str, str] = {}
    seen: set[tuple[str, str]] = set()  # (distribution, extra): an extra's needs count too
    todo = [(Requirement(r), "") for r in distribution(root).requires or []]
    while todo:
        req, extra_of_parent = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": extra_of_parent}):
            continue  # another extra's requirement (dev tools) or another platform's
        name = canonical(req.name)
        if name in present or CUDA_STACK.match(name):
            continue
        try:
            dist = distribution(req.name)
        except PackageNotFoundError:
            continue  # optional on this platform and not installed: not needed here either
        found[name] = dist.version
        for extra in ("", *req.extras):  # uvicorn[standard], psycopg[binary]
            if (name, extra) not in seen:
                seen.add((name, extra))
                todo += [(Requirement(r), extra) for r in dist.requires or []]
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--present", type=Path, help="distributions the target already has")
    parser.add_argument("--python-version", default="3.12")
    args = parser.parse_args()
    present = set()
    if args.present:
        present = {canonical(n) for n in args.present.read_text().split() if n.strip()}
    wanted = dict(sorted(runtime_closure(present).items()))
    args.out.mkdir(parents=True, exist_ok=True)
    tag = "".join(args.python_version.split("."))
    download = [sys.executable, "-m", "pip", "download", "-q", "--no-deps"]
    download += ["--only-binary=:all:", "--python-version", args.python_version]
    download += [
        "--implementation",
        "cp",
        "--abi",
        f"cp{tag}",
        "--abi",
        "abi3",
        "--abi",
        "none",
    ]
    download += [arg for p in PLATFORMS for arg in ("--platform", p)]
    download += ["-d", str(args.out), *(f"{n}=={v}" for n, v in wanted.items())]
    subprocess.run(download, check=True)
    build = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        "-q",
        "--no-deps",
        "--no-build-isolation",
    ]
    subprocess.run([*build, "-w", str(args.out), str(ROOT / "backend")], check=True)
    print(f"{len(wanted)} dependency wheels + gpudeck in {args.out}: {', '.join(wanted)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
