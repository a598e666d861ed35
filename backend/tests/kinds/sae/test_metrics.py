"""metrics.DeadLatents across ranks: one collective a step, and the state one rank with the
whole batch would keep (issue 33: the frequency rule's second all_reduce made a tiny two-rank
step ~30 % slower)."""

from __future__ import annotations

from pathlib import Path

import dead_latents_steps as steps
import torch
from rank_processes import run_in_processes


def test_two_ranks_keep_one_ranks_dead_latents_with_one_collective_a_step(
    tmp_path: Path,
) -> None:
    run_in_processes(steps.rank_main, "gloo", steps.WORLD, tmp_path)
    whole = steps.observe_all(None)
    # Both rules took part: latents dead by frequency alone, and by the window.
    last = whole["masks"][-1]
    assert (last & (whole["steps_since_fired"] < steps.WINDOW)).any()
    assert last[list(steps.SILENT)].all()
    for rank in range(steps.WORLD):
        got = torch.load(tmp_path / f"dead-{rank}.pt")
        assert int(got["all_reduce_calls"]) == steps.STEPS, rank
        assert torch.equal(got["masks"], whole["masks"]), rank
        assert torch.equal(got["steps_since_fired"], whole["steps_since_fired"]), rank
        assert torch.equal(got["frequency"], whole["frequency"]), rank
