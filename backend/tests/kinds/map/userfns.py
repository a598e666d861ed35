"""A user's map functions, copied into the test's code root (imported by the ranks only)."""

from __future__ import annotations

import os

import torch


def affine(batch: torch.Tensor, *, scale: float, device: torch.device) -> dict[str, torch.Tensor]:
    """Rows of an array: one output row per item, plus the rank that computed it."""
    assert batch.device == device
    rank = torch.full((len(batch), 1), int(os.environ["RANK"]))
    return {"y": batch.double() * scale + 1, "rank": rank}


def repeat(batch: list[dict[str, int]]) -> torch.Tensor:
    """Records of a .jsonl: item n gives n % 3 rows (none for some), each holding n."""
    rows = [[r["n"], k] for r in batch for k in range(r["n"] % 3)]
    return torch.tensor(rows, dtype=torch.int64).reshape(-1, 2)


def fails_on_13(batch: torch.Tensor) -> torch.Tensor:
    if bool((batch == 13).any()):
        raise ValueError("item 13 is unlucky")
    return batch
