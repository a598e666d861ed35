"""A kind's checkpoints are its own files: the example plugin kind (examples/kinds/
gpudeck-kind-linreg) writes `linreg.safetensors` and `linreg.json`, none of the `sae` kind's,
and a run resumed from one of them ends exactly where the uninterrupted run does."""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from rankrunner import make_spec, read_events, run_ranks

from gpudeck.engine import checkpoint

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "kinds" / "gpudeck-kind-linreg"
# Before any rank process starts: the forkserver takes sys.path as it is when it starts.
sys.path.insert(0, str(EXAMPLE))
KIND = ["gpudeck_kind_linreg:KIND"]
CONFIG = {"d_in": 8, "batch_size": 64, "steps": 30, "metrics_interval": 10}


def _final_weight(spec_dir: str) -> torch.Tensor:
    latest = checkpoint.latest_checkpoint(spec_dir)
    assert latest is not None and latest.name == "step_30"
    return checkpoint.open_checkpoint(latest).read_tensors("linreg.safetensors")["weight"]


def test_the_plugin_kind_writes_its_own_files_and_resumes_exactly(tmp_path: Path) -> None:
    straight = make_spec(tmp_path / "a", {**CONFIG, "checkpoint_interval": 10}, kind="linreg")
    assert run_ranks(straight, 2, extra_kinds=KIND) == [0, 0]
    saved = checkpoint.list_checkpoints(straight.checkpoint_dir)
    assert [p.name for p in saved] == ["step_10", "step_20", "step_30"]
    assert {p.name for p in saved[0].iterdir()} == {
        "linreg.safetensors",
        "linreg.json",
        ".gpudeck-complete",
    }

    resumed = make_spec(tmp_path / "b", CONFIG, kind="linreg", job_id=2, resume_from=str(saved[0]))
    assert run_ranks(resumed, 2, extra_kinds=KIND) == [0, 0]
    assert torch.equal(
        _final_weight(resumed.checkpoint_dir), _final_weight(straight.checkpoint_dir)
    )
    before = {e["data"]["step"]: e["data"]["metrics"] for e in read_events(straight, "metrics")}
    after = {e["data"]["step"]: e["data"]["metrics"] for e in read_events(resumed, "metrics")}
    assert sorted(after) == [20, 30]  # the curve goes on from step 10
    assert after == {step: before[step] for step in (20, 30)}
    logs = [e["data"]["message"] for e in read_events(resumed, "log")]
    assert logs == [f"resumed from {saved[0]} at step 10"]
