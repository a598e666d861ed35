"""One real Slurm cluster per test process (cluster.py), and a client whose commands are counted."""

from __future__ import annotations

import itertools
import re
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path, PurePosixPath

import pytest
from slurm.cluster import SlurmCluster, missing_binaries, start_cluster
from slurm.executor_cases import (  # noqa: F401 (fixtures)
    bare_executor,
    executor,
    lab,
    pass_context,
)

from gpudeck.slurm import BatchSpec, CommandResult, LocalRunner, SlurmClient

_GPUDECK_IDS = itertools.count(1000)
# Where a failed test's Slurm logs and job output files are kept: the cluster's own directory
# goes with it at the end of the session.
KEPT_LOGS = Path(tempfile.gettempdir()) / "gpudeck-slurm-logs"


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    if why := missing_binaries():
        pytest.skip(why)
    cluster = start_cluster()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(autouse=True)
def no_slurm_job_outlives_its_test(request: pytest.FixtureRequest) -> Iterator[None]:
    """The cluster is the test process's: a job one test left running (a million-step SAE
    cancelled once, a sleep that outlived its assertion) would hold GPUs and cores through
    every test after it."""
    if "slurm_cluster" not in request.fixturenames:
        yield
        return
    cluster: SlurmCluster = request.getfixturevalue("slurm_cluster")
    request.node.slurm_log_sizes = cluster.log_sizes()
    yield
    cluster.cancel_everything()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Iterator[None]:
    """A failed test's Slurm logs (the lines the daemons wrote during it in the report; whole
    logs and the test's job output files under KEPT_LOGS/<test>), so a CI failure says why."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()  # type: ignore[attr-defined]
    funcargs = getattr(item, "funcargs", {})
    cluster: SlurmCluster | None = funcargs.get("slurm_cluster")
    if report.when != "call" or not report.failed or cluster is None:
        return
    dest = KEPT_LOGS / re.sub(r"[^\w.-]+", "_", item.name)
    shutil.rmtree(dest, ignore_errors=True)
    said = cluster.keep_logs(dest, getattr(item, "slurm_log_sizes", {}))
    if (tmp_path := funcargs.get("tmp_path")) is not None:
        try:
            shutil.copytree(tmp_path, dest / "job-files", symlinks=True)
        except shutil.Error as errors:  # files a rank still running removed (its step markers)
            said += f"\n{len(errors.args[0])} job file(s) vanished while copied"
    report.sections.append((f"Slurm logs during the test (all of them in {dest})", said))


class CountingRunner(LocalRunner):
    """The local runner, counting each command by name (squeue, sacct, ...)."""

    def __init__(self, env: dict[str, str]) -> None:
        super().__init__(env)
        object.__setattr__(self, "calls", Counter())

    calls: Counter[str]

    def __call__(
        self, argv: Sequence[str], *, input_text: str | None = None, timeout_s: float
    ) -> CommandResult:
        self.calls[argv[0]] += 1
        return super().__call__(argv, input_text=input_text, timeout_s=timeout_s)


@pytest.fixture
def runner(slurm_cluster: SlurmCluster) -> CountingRunner:
    return CountingRunner(slurm_cluster.env)


@pytest.fixture
def slurm(runner: CountingRunner) -> SlurmClient:
    return SlurmClient(runner, timeout_s=20)


@pytest.fixture
def spec_for(tmp_path: Path) -> Callable[..., BatchSpec]:
    """A BatchSpec whose output lands in this test's directory, with a GPUDeck job id no other
    test of the session has (the cluster is the session's)."""

    def make(argv: Sequence[str], **fields: object) -> BatchSpec:
        fields = {"partition": "gpu", **fields}
        return BatchSpec(
            gpudeck_job_id=next(_GPUDECK_IDS), argv=tuple(argv), output_dir=PurePosixPath(tmp_path),
            **fields,  # type: ignore[arg-type]
        )  # fmt: skip

    return make
