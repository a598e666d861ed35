"""What an `sae` config's fields come to once the rest of it is known: a schedule's share of the
run in steps, and what an empty field stands for (the job page and `gpudeck show` print these
beside the values, so "0.05" reads as "75 steps" on a 1,500-step run)."""

from __future__ import annotations

from gpudeck.kinds.sae.config import TOPK_WARM_UP_SHARE, SaeConfig

SCHEDULES = ("lr_warm_up_steps", "lr_decay_steps", "l1_warm_up_steps")


def _steps(n: int) -> str:
    return f"{n:,} step" + ("" if n == 1 else "s")


def settings_notes(config: SaeConfig) -> dict[str, str]:
    """Each field whose meaning depends on others, by path: its value in steps or in use."""
    lr_warm_up, lr_decay, l1_warm_up = config.schedule_lengths()
    notes = {
        "lr_warm_up_steps": _steps(lr_warm_up),
        "lr_decay_steps": _steps(lr_decay),
        "l1_warm_up_steps": _steps(l1_warm_up),
    }
    # A whole count the run does not cut says nothing new: leave it bare.
    for path in SCHEDULES:
        value = getattr(config, path)
        if isinstance(value, int) and notes[path] == _steps(value):
            del notes[path]
    if config.architecture in TOPK_WARM_UP_SHARE:
        notes["topk_warm_up_steps"] = _steps(config.topk_warm_up_length())
    if config.architecture == "jumprelu" and config.l0_coefficient is None:
        notes["l0_coefficient"] = f"{config.l0_coefficient_value:g} (d_in / 64)"
    if config.grad_clip_norm is None:
        clip = config.grad_clip_norm_value
        notes["grad_clip_norm"] = "never" if clip is None else f"{clip:g}"
    if config.dead_min_frequency is None and config.architecture in ("topk", "batchtopk"):
        notes["dead_min_frequency"] = f"{config.dead_min_frequency_value:.3g} (k / d_sae / 100)"
    return notes
