"""Where the SAE step's CUDA peak differs from the estimate: the allocator's live blocks at the
peak of a training step on the GPU, grouped by the Python line that allocated them, beside the
estimate's step figure (kinds/sae/memory.estimate_sae) for the same config.

    cd backend && python3 ../bench/estimate_gap.py [--shape 512x4096x4096] [--arch standard]
        [--dtype float32] [--out gap.json]

`make gpu-check` (section 2) measures how far apart the two are; this says what the gap is
made of. It needs a CUDA device; it runs the step as the gpu check does (DDP over a world of
one, step 1's bucket held through step 2), with the allocator's history recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "backend" / "tests" / "kinds" / "sae"))
from memory_measure import cuda_step_peak

from gpudeck.kinds.sae.config import SaeConfig
from gpudeck.kinds.sae.memory import estimate_sae

MIB = 1024**2


def live_at_peak(snapshot: dict[str, Any]) -> list[tuple[int, str]]:
    """(size, where) of every block allocated at the moment the allocated total peaked."""
    live: dict[int, tuple[int, str]] = {}
    total, peak, at_peak = 0, -1, {}
    for device_trace in snapshot["device_traces"]:
        for event in device_trace:
            action, addr, size = event["action"], event["addr"], event["size"]
            if action == "alloc":
                live[addr] = (size, _where(event.get("frames", [])))
                total += size
                if total > peak:
                    peak, at_peak = total, dict(live)
            elif action == "free_requested" and addr in live:
                total -= live.pop(addr)[0]
    return sorted(at_peak.values(), reverse=True)


def _where(frames: list[dict[str, Any]]) -> str:
    """The innermost frame in gpudeck or torch.optim / nn code: the line that asked."""
    for frame in frames:
        name = frame.get("filename", "")
        if "gpudeck" in name or "torch/optim" in name or "torch/nn" in name or "tests/" in name:
            return f"{Path(name).name}:{frame.get('line')} {frame.get('name')}"
    return frames[0].get("name", "?") if frames else "?"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", default="512x4096x4096", help="d_in x d_sae x batch")
    parser.add_argument("--arch", default="standard")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("estimate_gap: no CUDA device here")
        return 0
    d_in, d_sae, batch = (int(v) for v in args.shape.split("x"))
    config = SaeConfig(
        architecture=args.arch, d_in=d_in, d_sae=d_sae, batch_size=batch, dtype=args.dtype
    )
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29561")
    dist.init_process_group("nccl", rank=0, world_size=1)
    device = torch.device("cuda", 0)
    torch.cuda.set_device(device)
    cuda_step_peak(config, device)  # warm: cuBLAS handles, kernels, NCCL buffers
    torch.cuda.memory._record_memory_history(max_entries=200_000)
    peak, _ = cuda_step_peak(config, device)
    snapshot = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    dist.destroy_process_group()
    estimate = estimate_sae(config)
    blocks = live_at_peak(snapshot)
    by_line: dict[str, list[int]] = defaultdict(list)
    for size, where in blocks:
        by_line[where].append(size)
    rows = sorted(by_line.items(), key=lambda kv: -sum(kv[1]))
    step = estimate.peak_step_bytes
    print(
        f"{args.arch} {args.shape} {args.dtype}: allocator peak {peak / MIB:.1f} MiB, "
        f"estimate's step {step / MIB:.1f} MiB ({(step - peak) / peak:+.1%})"
    )
    held = sum(size for size, _ in blocks)
    print(f"live at the recorded peak: {held / MIB:.1f} MiB in {len(blocks)} blocks")
    for where, sizes in rows[:25]:
        print(f"  {sum(sizes) / MIB:9.1f} MiB  {len(sizes):4d} blocks  {where}")
    print("estimate's components:")
    for component in estimate.breakdown:
        print(f"  {component.bytes / MIB:9.1f} MiB  {component.name}: {component.note}")
    if args.out:
        args.out.write_text(
            json.dumps(
                {
                    "config": args.shape,
                    "arch": args.arch,
                    "dtype": args.dtype,
                    "peak": peak,
                    "estimate_step": step,
                    "live": [[w, sum(s), len(s)] for w, s in rows],
                },
                indent=1,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
