"""Section 1: the NVML adapter (telemetry/nvml.NvmlProvider, what the sampler reads) against
`nvidia-smi` on every device, the per-process view against `--query-compute-apps`, a process
started outside GPUDeck shown as busy, and what a sample costs per device.

The dry run puts tests/telemetry/fake_nvml's fake libnvidia-ml under the real pynvml and reads
the reference values from the fake's own state, as nvidia-smi would print them."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from gpucheck.rows import Check, Row
from gpudeck.telemetry.nvml import NvmlProvider
from gpudeck.telemetry.provider import SampleContext
from gpudeck.telemetry.schema import DeviceSample

MIB = 1024**2
EXTERNAL_BYTES = 4 * 1024**3
SMI_GPU = "uuid,memory.used,utilization.gpu,temperature.gpu,power.draw,clocks.sm"
SMI_APPS = "gpu_uuid,pid,used_memory"
# field: (our reading in smi's unit, allowed |difference| given smi's value, goal in words)
FIELDS: dict[str, tuple[Callable[[DeviceSample], float | None], Callable[[float], float], str]] = {
    "memory used (MiB)": (
        lambda s: None if s.memory_used_bytes is None else s.memory_used_bytes / MIB,
        lambda smi: max(0.01 * smi, 1.0),  # 1 %, or smi's 1 MiB rounding on an idle device
        "within 1 % (or 1 MiB)",
    ),
    "utilization (%)": (lambda s: s.utilization_gpu_pct, lambda smi: 5.0, "within 5 points"),
    "temperature (C)": (lambda s: s.temperature_c, lambda smi: 2.0, "within 2 C"),
    "power (W)": (lambda s: s.power_watts, lambda smi: max(0.1 * smi, 5.0), "within 10 % or 5 W"),
    "SM clock (MHz)": (lambda s: s.sm_clock_mhz, lambda smi: 0.1 * smi, "within 10 %"),
}


@dataclass
class Smi:
    """What nvidia-smi says: per device uuid, the FIELDS in its units; per (uuid, pid), MiB."""

    gpus: dict[str, list[float | None]]
    apps: dict[tuple[str, int], float | None]


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:  # "[N/A]", "[Not Supported]"
        return None


def nvidia_smi() -> Smi:
    def query(what: str, fields: str) -> list[list[str]]:
        out = subprocess.run(
            ["nvidia-smi", f"--query-{what}={fields}", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, check=True, timeout=30,
        ).stdout  # fmt: skip
        return [[c.strip() for c in line.split(",")] for line in out.splitlines() if line.strip()]

    gpus = {row[0]: [_number(c) for c in row[1:]] for row in query("gpu", SMI_GPU)}
    apps = {(row[0], int(row[1])): _number(row[2]) for row in query("compute-apps", SMI_APPS)}
    return Smi(gpus, apps)


def _external(dry_run: bool) -> subprocess.Popen[str]:
    """A process outside GPUDeck that holds 4 GiB of device 0 (in a dry run: just a process)."""
    code = (
        "import torch\n"
        f"x = torch.empty({EXTERNAL_BYTES}, dtype=torch.uint8, device='cuda:0')\n"
        "torch.cuda.synchronize()\n"
    )
    wait = "print('ready', flush=True)\nsys.stdin.read()\n"
    code = "import sys\n" + ("" if dry_run else code) + wait
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    return proc


def run(check: Check) -> Iterator[Row]:
    fake = _FakeSmi.install() if check.dry_run else None
    external = _external(check.dry_run)
    try:
        if fake:
            fake.hold(external.pid, EXTERNAL_BYTES)
        time.sleep(0.5)  # let the driver's counters see the allocation
        provider = NvmlProvider(process_interval_s=0.0)  # processes read on every sample
        ours = {s.uuid: s for s in provider.read(SampleContext())}
        smi = fake.read() if fake else nvidia_smi()
        yield from _compare_readings(ours, smi)
        yield from _compare_processes(ours, smi, external.pid)
        yield from _cost(check)
        provider.close()
    finally:
        external.stdin.close()  # type: ignore[union-attr]
        external.wait(30)
        if fake:
            fake.undo()


def _compare_readings(ours: dict[str, DeviceSample], smi: Smi) -> Iterator[Row]:
    command = f"nvidia-smi --query-gpu={SMI_GPU} --format=csv,noheader,nounits"
    yield Row.judged(
        "devices found",
        f"NVML adapter {len(ours)}, nvidia-smi {len(smi.gpus)}",
        "the same uuids",
        set(ours) == set(smi.gpus),
        command,
    )
    for column, (field, (read, allowed, goal)) in enumerate(FIELDS.items()):
        worst, ok, seen = 0.0, True, []
        for uuid, sample in ours.items():
            theirs, mine = smi.gpus.get(uuid, [None] * len(FIELDS))[column], read(sample)
            seen.append(f"{mine}/{theirs}")
            if theirs is None or mine is None:  # a reading one side cannot take
                ok = ok and theirs is None and mine is None
                continue
            worst = max(worst, abs(mine - theirs))
            ok = ok and abs(mine - theirs) <= allowed(theirs)
        pairs = ", ".join(seen[:4])
        figure = f"worst |ours - smi| {worst:.1f} over {len(ours)} devices (ours/smi: {pairs})"
        yield Row.judged(field, figure, goal, ok, command, worst=worst, values=seen)


def _compare_processes(ours: dict[str, DeviceSample], smi: Smi, external_pid: int) -> Iterator[Row]:
    mine = {
        (uuid, p.pid): None if p.used_memory_bytes is None else p.used_memory_bytes / MIB
        for uuid, s in ours.items()
        for p in s.processes
    }
    # Ours lists graphics processes too; every compute app nvidia-smi lists must be ours.
    missing = set(smi.apps) - set(mine)
    off = [key for key in smi.apps if key in mine and _differs(mine[key], smi.apps[key])]
    yield Row.judged(
        "per-process view",
        f"{len(smi.apps)} compute apps in nvidia-smi, {len(missing)} missing from ours, "
        f"{len(off)} with other memory",
        "every app listed, memory within 1 MiB",
        not missing and not off,
        f"nvidia-smi --query-compute-apps={SMI_APPS} --format=csv,noheader,nounits",
        missing=[list(k) for k in missing],
    )
    first = min(ours.values(), key=lambda s: s.index)
    seen = [p for p in first.processes if p.pid == external_pid]
    used = seen[0].used_memory_bytes if seen else None
    yield Row.judged(
        "external process shown busy",
        f"pid {external_pid} holding 4 GiB outside GPUDeck: "
        + (
            f"listed, {used / MIB:.0f} MiB, managed={seen[0].managed}"
            if seen and used
            else "not listed"
        ),
        "listed on device 0, not managed, >= 4 GiB",
        bool(seen) and not seen[0].managed and (used or 0) >= EXTERNAL_BYTES,
    )


def _differs(mine: float | None, theirs: float | None) -> bool:
    return mine is None or theirs is None or abs(mine - theirs) > 1.0


def _cost(check: Check) -> Iterator[Row]:
    """The adapter's read per device per sample (processes refreshed every 5 s, as the sampler
    does) beside the bare pynvml calls for the same readings, interleaved."""
    import pynvml

    samples = 200 if not check.dry_run else 50
    provider = NvmlProvider()
    handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
    ours, bare = [], []
    for _ in range(samples):
        start = time.perf_counter()
        provider.read(SampleContext())
        ours.append(time.perf_counter() - start)
        start = time.perf_counter()
        for h in handles:
            pynvml.nvmlDeviceGetMemoryInfo(h, pynvml.nvmlMemory_v2)
            pynvml.nvmlDeviceGetUtilizationRates(h)
            pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)
            pynvml.nvmlDeviceGetPowerUsage(h)
            pynvml.nvmlDeviceGetEnforcedPowerLimit(h)
            pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)
        bare.append(time.perf_counter() - start)
    provider.close()
    ours.sort(), bare.sort()
    per_device_ms = 1000 * ours[len(ours) // 2] / len(handles)
    bare_ms = 1000 * bare[len(bare) // 2] / len(handles)
    yield Row.judged(
        "sample cost per device",
        f"{per_device_ms:.3f} ms (bare pynvml calls {bare_ms:.3f} ms, "
        f"{per_device_ms / bare_ms:.2f}x), median of {samples}",
        "<= 1 ms of overhead per device",
        per_device_ms - bare_ms <= 1.0,
        "gpudeck.telemetry.nvml.NvmlProvider.read",
        per_device_ms=per_device_ms,
        bare_ms=bare_ms,
    )


class _FakeSmi:
    """Dry run: the fake libnvidia-ml of the tests under pynvml, and nvidia-smi read off it."""

    def __init__(self) -> None:
        import pytest

        sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "backend" / "tests"))
        from telemetry.fake_nvml import GIB, FakeGpu, installer

        self._patch = pytest.MonkeyPatch()
        gpus = [FakeGpu(f"GPU-dry-{i}", memory_used=i * GIB, util_gpu=10 * i) for i in range(2)]
        self.lib = installer(self._patch)(gpus)

    @classmethod
    def install(cls) -> _FakeSmi:
        return cls()

    def hold(self, pid: int, size: int) -> None:
        self.lib.gpus[0].compute.append((pid, size))
        self.lib.gpus[0].memory_used += size

    def read(self) -> Smi:
        gpus = {
            g.uuid: [g.memory_used / MIB, g.util_gpu, g.temperature, g.power_mw / 1000, g.sm_clock]
            for g in self.lib.gpus
        }
        apps = {
            (g.uuid, pid): used and used / MIB for g in self.lib.gpus for pid, used in g.compute
        }
        return Smi(gpus, apps)  # type: ignore[arg-type]

    def undo(self) -> None:
        self._patch.undo()
