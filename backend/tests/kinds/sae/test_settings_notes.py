"""kinds/sae/settings_notes.py: what a field comes to given the rest of the config, as the job
page and `gpudeck show` print it beside the value."""

from __future__ import annotations

from gpudeck.kinds.sae.config import SaeConfig
from gpudeck.kinds.sae.settings_notes import settings_notes


def test_schedules_read_in_steps_of_this_run_and_a_count_past_it_says_where_it_is_cut() -> None:
    notes = settings_notes(SaeConfig(steps=1500, lr_warm_up_steps=0.05, lr_decay_steps=2000))
    assert notes["lr_warm_up_steps"] == "75 steps"
    # 2,000 decay steps on a 1,500-step run: cut to what the warm-up leaves.
    assert notes["lr_decay_steps"] == "1,425 steps"
    # A count inside the run says nothing the value does not.
    assert "l1_warm_up_steps" not in settings_notes(SaeConfig(steps=1500, l1_warm_up_steps=10))
    assert settings_notes(SaeConfig(steps=1, lr_warm_up_steps=0.9))["lr_warm_up_steps"] == "1 step"


def test_an_empty_field_says_what_the_architecture_makes_of_it() -> None:
    batchtopk = settings_notes(SaeConfig(architecture="batchtopk", k=4, d_sae=400, steps=300))
    assert batchtopk["topk_warm_up_steps"] == "150 steps"  # half the run
    assert batchtopk["dead_min_frequency"] == "0.0001 (k / d_sae / 100)"
    assert batchtopk["grad_clip_norm"] == "never"
    jumprelu = settings_notes(SaeConfig(architecture="jumprelu", d_in=32, topk_warm_up_steps=0))
    assert jumprelu["topk_warm_up_steps"] == "0 steps"
    assert jumprelu["l0_coefficient"] == "0.5 (d_in / 64)" and jumprelu["grad_clip_norm"] == "1"
    assert "dead_min_frequency" not in jumprelu  # no AuxK outside the TopK family
    # Set fields speak for themselves.
    chosen = settings_notes(
        SaeConfig(architecture="jumprelu", l0_coefficient=2.0, grad_clip_norm=0.0)
    )
    assert "l0_coefficient" not in chosen and "grad_clip_norm" not in chosen
    standard = settings_notes(SaeConfig(architecture="standard"))
    assert "topk_warm_up_steps" not in standard and "l0_coefficient" not in standard
