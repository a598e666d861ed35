"""Section 4: the SAE trainer (the real `sae` kind in spawned ranks, as the worker launches
them) at the same global batch on 1, 2, 4, 8 GPUs: activations per second and scaling
efficiency, beside a plain PyTorch loop of the same math on one GPU in the same run
(bench/trainer_throughput.py's trainer_rate and plain_rate)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from trainer_throughput import plain_rate, trainer_rate

from gpucheck.rows import Check, Row

GOAL_EFFICIENCY = 0.9


def run(check: Check) -> Iterator[Row]:
    d_in, d_sae, batch = check.pick((1024, 32768, 4096), (64, 256, 256))  # type: ignore[misc]
    steps, rows = check.pick(60, 6), check.pick(32768, 4096)
    shape = f"d_in {d_in}, d_sae {d_sae}, global batch {batch}, fp32, {steps} steps"
    with tempfile.TemporaryDirectory(dir=check.work_dir) as tmp:
        data_dir = Path(tmp)
        (data_dir / "datasets").mkdir()
        acts = np.maximum(np.random.default_rng(0).standard_normal((rows, d_in)), 0)
        np.save(data_dir / "datasets" / "acts.npy", acts.astype(np.float32))
        device = "cuda:0" if check.device_type == "cuda" else "cpu"
        plain = plain_rate(acts.astype(np.float32), steps, d_sae=d_sae, batch=batch, device=device)
        command = "bench/trainer_throughput.py plain_rate"
        figure = f"{plain:,.0f} activations/s ({shape})"
        yield Row("plain PyTorch loop, 1 device", figure, "", "info", command, {"rate": plain})
        rates: dict[int, float] = {}
        for n in check.rank_counts():
            rates[n] = trainer_rate(
                data_dir,
                n,
                steps,
                (d_in, d_sae, batch),
                check.device_type,  # type: ignore[arg-type]
            )
            yield _row(n, rates, plain, shape)
    if check.gpus < 2:
        why = f"{check.gpus} GPU here: needs 2 or more"
        yield Row.skipped("scaling 1 -> N", why, ">= 90 % at 8")


def _row(n: int, rates: dict[int, float], plain: float, shape: str) -> Row:
    command = f"sae trainer, {n} rank(s), {shape}"
    if n == 1:
        return Row(
            "trainer, 1 device",
            f"{rates[1]:,.0f} activations/s ({rates[1] / plain:.2f}x the plain loop)",
            "",
            "info",
            command,
            {"rate": rates[1], "plain": plain},
        )
    efficiency = rates[n] / (n * rates[1])
    return Row.judged(
        f"trainer, {n} devices",
        f"{rates[n]:,.0f} activations/s, {rates[n] / rates[1]:.2f}x 1 device: "
        f"efficiency {efficiency:.0%}",
        f">= {GOAL_EFFICIENCY:.0%}",
        efficiency >= GOAL_EFFICIENCY,
        command,
        rate=rates[n],
        efficiency=efficiency,
    )
