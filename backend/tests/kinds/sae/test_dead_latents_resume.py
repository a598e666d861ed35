"""The training-window dead-latent count across a resume: a resumed run reports what the run
without a stop would have reported. Its window used to restart at the resume, so the first
count after it was over a few steps only and named every latent that had not fired in them
(the chart's jump right after a resume, then its fall back to 0)."""

from __future__ import annotations

from pathlib import Path

from rankrunner import make_spec, read_events, run_ranks, tiny_config

from gpudeck.engine.checkpoint import latest_checkpoint


def _dead_counts(spec_dir: Path, config: dict, **kw: object) -> dict[int, float]:
    spec = make_spec(spec_dir, config, **kw)  # type: ignore[arg-type]
    assert run_ranks(spec, 1) == [0]
    return {
        e["data"]["step"]: e["data"]["metrics"]["dead_features"]
        for e in read_events(spec, "metrics")
    }


def test_a_resumed_run_counts_dead_latents_over_the_same_window(tmp_path: Path) -> None:
    # Many latents for few true features: some fire rarely, and a window of 5 steps misses them.
    shape = {"d_sae": 256, "metrics_interval": 5, "architecture": "topk", "k": 2}
    straight = _dead_counts(tmp_path / "straight", tiny_config(steps=80, **shape))
    first = make_spec(tmp_path / "first", tiny_config(steps=50, **shape))
    assert run_ranks(first, 1) == [0]
    resume_from = latest_checkpoint(first.checkpoint_dir)
    assert resume_from is not None and resume_from.name == "step_50"
    resumed = _dead_counts(
        tmp_path / "resumed", tiny_config(steps=80, **shape), resume_from=str(resume_from)
    )
    after = sorted(step for step in resumed if step > 50)
    assert after, resumed
    assert {s: resumed[s] for s in after} == {s: straight[s] for s in after}
