"""The fake-tensor estimate against the peak of a real CPU step, measured by torch.profiler.

"Peak" is the live bytes at the highest moment of a steady-state step (the second: Adam's state
exists), counting everything the rank holds then: parameters, Adam state, DDP buckets, the
batch. A world of one steps the bare model (train.parallelize); a rank of a larger world steps
DDP, whose per-rank memory does not depend on the world size, so the estimate for two ranks is
measured on DDP over a world of one with the per-rank batch. The profiler runs from before the
model exists, so the live curve starts at zero and every byte of the rank's state is in it. The
DDP step is measured at its worst timing (memory_measure.py): the first iteration's bucket,
which the process group's last all-reduce can keep past DDP's bucket rebuild, is held through
the second step. The estimate must cover that peak, the highest the real step can reach, not
only the usual one."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor

import pytest
import torch
import torch.distributed as dist
from memory_measure import clean_measurer, cuda_step_peak, measure

from gpudeck.engine.kinds import MemoryEstimate
from gpudeck.kinds.sae.config import SaeConfig
from gpudeck.kinds.sae.memory import estimate_sae, max_batch_size, trace_spec
from gpudeck.kinds.sae.memory_trace import trace

SHAPES = [(256, 2048, 64), (512, 4096, 4096), (768, 8192, 1024)]  # param-heavy, act-heavy, middle
TOLERANCE = 0.02
CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def measurer() -> Iterator[ProcessPoolExecutor]:
    with clean_measurer() as pool:
        yield pool


def measured_step_peak(
    pool: ProcessPoolExecutor, config: SaeConfig, *, ddp: bool, warm_up: bool = False
) -> int:
    config_json = config.model_dump(mode="json")
    return int(pool.submit(measure, config_json, ddp, warm_up).result(timeout=600))


def _ddp_estimate(config: SaeConfig) -> MemoryEstimate:
    """The estimate of a rank of two, each with `config`'s batch."""
    doubled = config.model_copy(update={"batch_size": 2 * config.batch_size})
    return estimate_sae(doubled, 2, device_type="cpu")


def _config(d_in: int, d_sae: int, batch: int, dtype: str, **extra: object) -> SaeConfig:
    # The shape sweeps measure the standard architecture; every architecture is measured at
    # one shape in test_estimate_covers_every_architecture.
    extra = {"architecture": "standard", **extra}
    return SaeConfig(d_in=d_in, d_sae=d_sae, batch_size=batch, dtype=dtype, **extra)  # type: ignore[arg-type]


# bf16 at the small shape only: CPU bf16 matmuls at the two large shapes cost ~110 s each on
# CI's two cores, and the dtype changes the byte sizes the trace counts, not the step's shape.
DDP_CASES = [(*shape, "float32") for shape in SHAPES] + [(*SHAPES[0], "bfloat16")]


@pytest.mark.parametrize(("d_in", "d_sae", "batch", "dtype"), DDP_CASES)
def test_estimate_matches_real_ddp_step(
    measurer: ProcessPoolExecutor, d_in: int, d_sae: int, batch: int, dtype: str
) -> None:
    config = _config(d_in, d_sae, batch, dtype)
    estimate = _ddp_estimate(config)
    measured = measured_step_peak(measurer, config, ddp=True)
    assert estimate.peak_step_bytes == pytest.approx(measured, rel=TOLERANCE)
    assert sum(estimate.bytes_by_component().values()) == estimate.bytes_per_device


@pytest.mark.parametrize(
    ("architecture", "sparse_decoder"),
    [
        ("standard", False),
        ("topk", True),
        ("topk", False),
        ("batchtopk", True),
        ("batchtopk", False),
        ("jumprelu", False),
    ],
)
def test_estimate_covers_every_architecture(
    measurer: ProcessPoolExecutor, architecture: str, sparse_decoder: bool
) -> None:
    """Each architecture's own step (TopK's gather decoder or dense, AuxK with every latent
    dead, BatchTopK's global threshold, JumpReLU's threshold parameter) is what is traced,
    and the TopK warm-up's step (BatchTopK's and JumpReLU's default): the higher of the two.
    One rank, as the trainer steps it: the bare model."""
    config = _config(
        256, 2048, 64, "float32", architecture=architecture, sparse_decoder=sparse_decoder
    )
    estimate = estimate_sae(config, 1, device_type="cpu")
    assert estimate.bytes_by_component()["ddp_buckets"] == 0
    measured = measured_step_peak(measurer, config, ddp=False)
    if config.topk_warm_up_length() > 0:
        warm_up = measured_step_peak(measurer, config, ddp=False, warm_up=True)
        measured = max(measured, warm_up)
    assert estimate.peak_step_bytes == pytest.approx(measured, rel=TOLERANCE)


@pytest.mark.parametrize(("d_in", "d_sae", "batch"), SHAPES)
def test_trace_matches_plain_step(
    measurer: ProcessPoolExecutor, d_in: int, d_sae: int, batch: int
) -> None:
    """The trace itself, without DDP's buckets, and with gradient clipping on."""
    config = _config(d_in, d_sae, batch, "float32", grad_clip_norm=1.0)
    spec = trace_spec(config, batch, "cpu")
    traced = trace(spec.__class__(**{**spec.__dict__, "ddp": False}))
    measured = measured_step_peak(measurer, config, ddp=False)
    assert traced.peak_bytes == pytest.approx(measured, rel=TOLERANCE)


def test_bucket_view_false_costs_a_copy_of_the_parameters(measurer: ProcessPoolExecutor) -> None:
    config = _config(256, 2048, 64, "float32", ddp={"gradient_as_bucket_view": False})
    estimate = _ddp_estimate(config)
    assert estimate.peak_step_bytes == pytest.approx(
        measured_step_peak(measurer, config, ddp=True), rel=TOLERANCE
    )
    assert estimate.bytes_by_component()["ddp_buckets"] == 4 * (2 * 256 * 2048 + 256 + 2048)


def test_cuda_estimate_rounds_and_adds_reserve() -> None:
    config = _config(768, 8192, 1024, "float32")
    cpu, cuda = (
        estimate_sae(config, 2, device_type="cpu"),
        estimate_sae(config, 2, device_type="cuda"),
    )
    assert cuda.peak_step_bytes > cpu.peak_step_bytes
    assert (
        cuda.bytes_per_device - cuda.peak_step_bytes
        == cuda.bytes_by_component()["framework_reserve"]
    )
    assert cuda.per_rank_batch == 512
    assert estimate_sae(config, 2, device_type="cuda") is cuda  # cached


def test_max_batch_fits_and_is_the_largest() -> None:
    config = _config(512, 4096, 256, "float32")
    free = 2 * 1024**3
    best = max_batch_size(config, 2, free, safety_margin_bytes=256 * 1024**2)
    assert best > 0 and best % 2 == 0
    budget = free - 256 * 1024**2
    assert (
        estimate_sae(config.model_copy(update={"batch_size": best}), 2).bytes_per_device <= budget
    )
    bigger = config.model_copy(update={"batch_size": best + 2})
    assert estimate_sae(bigger, 2).bytes_per_device > budget
    assert max_batch_size(config, 1, 1024) == 0


@pytest.mark.gpu
def test_estimate_matches_cuda_max_memory_allocated() -> None:
    """On the device machine: the estimate against the allocator's own peak counter."""
    device = torch.device("cuda", 0)
    config = _config(768, 8192, 1024, "float32")
    measured, _ = cuda_step_peak(config, device)  # one rank: the bare model
    estimate = estimate_sae(config, 1, device_type="cuda")
    assert estimate.peak_step_bytes == pytest.approx(measured, rel=0.03)
    if not dist.is_initialized():
        dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1)
    measured, _ = cuda_step_peak(config, device, ddp=True)  # a rank of two
    doubled = config.model_copy(update={"batch_size": 2 * config.batch_size})
    estimate = estimate_sae(doubled, 2, device_type="cuda")
    dist.destroy_process_group()
    assert estimate.peak_step_bytes == pytest.approx(measured, rel=0.03)
