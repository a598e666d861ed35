"""Section 5: the sparse TopK step on the GPU. Each TopK variant of the trainer's step (sparse
decoder and sparse encoder backward, each on or off; BatchTopK) against the dense one, timed
interleaved (bench/trainer_throughput.py's topk_step_s), at the CPU bench's shape and at a
302 M-parameter one, in float32 (the only dtype the sparse path runs in: bfloat16 decodes
densely, SaeConfig.sparse_kernels); and SAELens's TopK step on the same shape when sae_lens
is importable here."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

from trainer_throughput import topk_step_s

from gpucheck.rows import Check, Row

SHAPES = [
    ({"d_in": 512, "d_sae": 16384, "batch": 4096, "k": 32}, "float32"),
    ({"d_in": 2304, "d_sae": 65536, "batch": 4096, "k": 64}, "float32"),
]
DRY_SHAPES = [({"d_in": 64, "d_sae": 512, "batch": 128, "k": 8}, "float32")]


def run(check: Check) -> Iterator[Row]:
    steps = 2 if check.dry_run else 15
    device = "cuda:0" if check.device_type == "cuda" else "cpu"
    for shape, dtype in DRY_SHAPES if check.dry_run else SHAPES:
        label = ", ".join(f"{k} {v}" for k, v in shape.items()) + f", {dtype}"
        try:
            times = topk_step_s(steps, shape, device, dtype)
        except (NotImplementedError, RuntimeError) as exc:
            failed = f"{type(exc).__name__}: {str(exc)[:200]}"
            yield Row(f"TopK step ({label})", failed, "runs", "FAIL")
            continue
        for name, seconds in times.items():
            dense = times["BatchTopK dense" if name.startswith("BatchTopK") else "dense decoder"]
            row = f"{name} ({label})"
            figure = f"{seconds * 1000:.2f} ms/step, {dense / seconds:.2f}x dense"
            command = f"bench/trainer_throughput.py topk_step_s, median of {steps}"
            if name in ("dense decoder", "BatchTopK dense"):
                yield Row(row, figure, "", "info", command, {"s": seconds})
            else:  # sparse_decoder=True is the default because it is the faster path
                yield Row.judged(row, figure, ">= 1x dense (the default)", seconds <= dense,
                                 command, s=seconds, dense_s=dense)  # fmt: skip
    if importlib.util.find_spec("sae_lens") is None:
        yield Row.skipped("SAELens TopK step, same shapes", "sae_lens is not installed here")
    else:
        yield Row.skipped("SAELens TopK step, same shapes", "not wired for CUDA yet")
