"""The SAE estimate's caches are keyed by what changes memory, and by nothing else.

Every field of SaeConfig is classified below (a new field fails the first test until it is):
perturbing fields that do not change a step's memory leaves the estimate byte-identical and
traces nothing; changing a field that does changes the key; values whose magnitude the step
never branches on (clip norm, AuxK coefficient) collapse to the distinction it does make.
Traces are counted by wrapping the trace function, never timed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from gpudeck.engine.kinds import get_kind
from gpudeck.kinds.sae import memory, memory_trace
from gpudeck.kinds.sae.config import DdpOptions, FileDataset, SaeConfig, SyntheticDataset
from gpudeck.kinds.sae.memory_trace import TraceSpec
from gpudeck.services.sweeps.params import with_values

# Small enough to trace in a fraction of a second.
BASE = {"d_in": 16, "d_sae": 64, "batch_size": 32, "steps": 100, "dataset": {"type": "synthetic"}}
ARCHITECTURES = ["topk", "batchtopk", "jumprelu", "standard"]

# Fields whose value never changes what a step allocates, with other valid values.
VALUE_ONLY: dict[str, list[Any]] = {
    "l1_coefficient": [0.0, 0.5, 1e3],
    "l0_coefficient": [0.0, 7.5],
    "jumprelu_bandwidth": [0.001, 2.0],
    "jumprelu_init_threshold": [0.0, 3.0],
    "dead_window_steps": [1, 10_000],
    "dead_min_frequency": [0.0, 0.5],
    "batchtopk_threshold_lr": [0.0, 0.5],
    "normalize_activations": ["none"],
    "b_dec_init": ["zeros"],
    "lr": [1e-5, 0.3],
    "adam_beta1": [0.0, 0.5],
    "adam_beta2": [0.0, 0.9],
    "lr_warm_up_steps": [0, 0.5, 30],
    "lr_decay_steps": [0, 1.0, 50],
    "l1_warm_up_steps": [0.3, 20],
    "seed": [1, 2**32 - 1],
    "checkpoint_interval": [1, 10**6],
    "metrics_interval": [1, 1000],
    "dataset.num_features": [8, 4096],
    "dataset.active_features": [1.0, 20.0],
    "dataset.num_samples": [10, 10**9],
    "dataset": [
        {"type": "file", "path": "acts.npy"},
        {"type": "file", "path": "run/acts.safetensors", "tensor_name": "x"},
    ],
    "ddp.bucket_cap_mb": [1.0, 100.0],
    "ddp.broadcast_buffers": [True],
}
# Fields that change memory only for some architectures, or only by a distinction coarser
# than their value (each tested below).
CONDITIONAL = {
    "k",
    "sparse_decoder",
    "steps",
    "topk_warm_up_steps",
    "grad_clip_norm",
    "aux_k_coefficient",
}
# Fields that change memory for every architecture, with another value that does.
MEMORY: dict[str, Any] = {
    "architecture": None,  # each pair of architectures is compared below
    "d_in": 32,
    "d_sae": 128,
    "dtype": "bfloat16",
    "batch_size": 64,
    "ddp.gradient_as_bucket_view": False,
}
# Where a conditional field does not apply, other values of it change nothing.
INERT: dict[str, dict[str, list[Any]]] = {
    "standard": {"k": [1, 40], "sparse_decoder": [False], "steps": [1, 5000],
                 "topk_warm_up_steps": [0, 7], "aux_k_coefficient": [0.0, 3.0]},
    "topk": {"steps": [1, 5000], "topk_warm_up_steps": [0, 7]},
    "batchtopk": {"steps": [50, 5000], "topk_warm_up_steps": [7, 0.9]},
    "jumprelu": {"sparse_decoder": [False], "steps": [50, 5000],
                 "topk_warm_up_steps": [7, 0.9], "aux_k_coefficient": [0.0, 3.0]},
}  # fmt: skip


def config_of(architecture: str, /, **values: Any) -> SaeConfig:
    return SaeConfig.model_validate(with_values({**BASE, "architecture": architecture}, values))


def leaf_paths(model: type[BaseModel], prefix: str = "") -> set[str]:
    nested = {"ddp": [DdpOptions], "dataset": [SyntheticDataset, FileDataset]}
    paths = set()
    for name in model.model_fields:
        if name in nested and not prefix:
            paths |= {p for m in nested[name] for p in leaf_paths(m, f"{name}.")}
        else:
            paths.add(prefix + name)
    return paths


@pytest.fixture
def traces(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[TraceSpec]]:
    """Every trace run from here on (the caches start empty)."""
    memory.clear_cache()
    seen: list[TraceSpec] = []
    real = memory.trace

    def counting(spec: TraceSpec) -> memory_trace.TraceResult:
        seen.append(spec)
        return real(spec)

    monkeypatch.setattr(memory, "trace", counting)
    yield seen
    memory.clear_cache()


def test_every_field_is_classified_and_the_kind_declares_the_memory_ones() -> None:
    classified = {p for p in VALUE_ONLY if p != "dataset"} | CONDITIONAL | set(MEMORY)
    dataset_file_only = {"dataset.path", "dataset.tensor_name", "dataset.type"}
    assert leaf_paths(SaeConfig) == classified | dataset_file_only
    kind = get_kind("sae")
    assert kind is not None and kind.estimate_fields is not None
    assert set(kind.estimate_fields) == CONDITIONAL | set(MEMORY)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data(), architecture=st.sampled_from(ARCHITECTURES))
def test_fields_that_do_not_change_memory_change_nothing_and_trace_nothing(
    traces: list[TraceSpec], data: st.DataObject, architecture: str
) -> None:
    base = memory.estimate_sae(config_of(architecture), 2)
    choices = {**VALUE_ONLY, **INERT[architecture]}
    paths = data.draw(st.lists(st.sampled_from(sorted(choices)), min_size=1, unique=True))
    values = {p: data.draw(st.sampled_from(choices[p])) for p in paths}
    if "dataset" in values:  # the whole dataset replaced: its synthetic fields go with it
        values = {p: v for p, v in values.items() if not p.startswith("dataset.")}
    before = len(traces)
    perturbed = memory.estimate_sae(config_of(architecture, **values), 2)
    assert perturbed.model_dump_json() == base.model_dump_json(), values
    assert len(traces) == before, (values, traces[before:])


def test_a_thousand_learning_rates_trace_once(traces: list[TraceSpec]) -> None:
    estimates = {
        memory.estimate_sae(config_of("topk", lr=1e-4 * (1 + i)), 1).model_dump_json()
        for i in range(1000)
    }
    assert len(estimates) == 1 and len(traces) == 1


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_each_memory_field_changes_the_key(architecture: str) -> None:
    def key(**values: Any) -> memory.EstimateKey:
        return memory.estimate_key(config_of(architecture, **values), 1, "cuda")

    for path, other in MEMORY.items():
        if path != "architecture":
            assert key(**{path: other}) != key(), path
    others = [a for a in ARCHITECTURES if a != architecture]
    assert all(key(architecture=a) != key() for a in others)
    assert memory.estimate_key(config_of(architecture), 2, "cuda") != key()
    assert memory.estimate_key(config_of(architecture), 1, "cpu") != key()


@pytest.mark.parametrize("architecture", ["topk", "batchtopk"])
def test_the_topk_family_keys_k_the_decoder_and_whether_auxk_runs(architecture: str) -> None:
    def key(**values: Any) -> memory.EstimateKey:
        return memory.estimate_key(config_of(architecture, **values), 1, "cuda")

    assert key(k=8) != key(k=4)
    assert key(sparse_decoder=False) != key(sparse_decoder=True)
    assert key(aux_k_coefficient=0.0) != key(aux_k_coefficient=1.0)
    assert key(aux_k_coefficient=0.25) == key(aux_k_coefficient=40.0)
    # bfloat16 decodes densely whatever the field says (SaeConfig.sparse_kernels)
    bf16 = {"dtype": "bfloat16"}
    assert key(**bf16, sparse_decoder=False) == key(**bf16, sparse_decoder=True)


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_clipping_counts_as_on_or_off_never_by_its_norm(architecture: str) -> None:
    def key(norm: float | None) -> memory.EstimateKey:
        return memory.estimate_key(config_of(architecture, grad_clip_norm=norm), 1, "cuda")

    assert key(0.5) == key(100.0)
    assert key(0.5) != key(0.0)  # 0: never clip
    clips_by_default = architecture == "jumprelu"
    assert (key(None) == key(1.0)) is clips_by_default


@pytest.mark.parametrize("architecture", ["batchtopk", "jumprelu"])
def test_the_topk_warm_up_counts_by_whether_it_happens(architecture: str) -> None:
    def key(**values: Any) -> memory.EstimateKey:
        return memory.estimate_key(config_of(architecture, **values), 1, "cuda")

    assert len(key().phases) == 2 and len(key(topk_warm_up_steps=0).phases) == 1
    assert key(steps=1) != key(steps=2)  # half of one step rounds to no warm-up
    assert key(topk_warm_up_steps=0.1) == key(topk_warm_up_steps=60)
    assert key(k=3) != key(k=9)  # the warm-up selects k per sample
    without = key(topk_warm_up_steps=0, k=3), key(topk_warm_up_steps=0, k=9)
    if architecture == "jumprelu":  # its own step has no k
        assert without[0] == without[1]
    else:  # BatchTopK's own step selects k x B
        assert without[0] != without[1]


def test_the_trace_is_the_same_whatever_the_values_it_leaves_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """What TraceSpec leaves out, read off the real step: tracing with other learning rates,
    betas, coefficients and clip norms allocates exactly the same."""
    specs = [memory.trace_spec(config_of(a, grad_clip_norm=1.0), 32, "cuda") for a in ARCHITECTURES]
    specs.append(dataclasses.replace(specs[2], topk_warm_up=True, k=5))  # JumpReLU's warm-up
    usual = [memory_trace.trace(spec) for spec in specs]
    real_adam = torch.optim.Adam
    monkeypatch.setattr(memory_trace, "TRACE_COEFFICIENT", 0.0)
    monkeypatch.setattr(memory_trace, "TRACE_CLIP_NORM", 1e-6)
    monkeypatch.setattr(
        memory_trace.torch.optim,
        "Adam",
        lambda params, **kw: real_adam(params, lr=0.7, betas=(0.0, 0.5), **kw),
    )
    assert [memory_trace.trace(spec) for spec in specs] == usual
