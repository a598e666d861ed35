"""Script jobs end to end: a real worker runs the example DDP script with the real torchrun on
two simulated devices (CPU, gloo), and every way the job can end leaves no process of it.

The job's processes are found by the token the guard puts in their environment (its
command.json), so a rank that left its process group, or lost its parent, is still seen.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest
import redis
from e2e_helpers import WorkerProcess, launch_record, wait_status
from fastapi.testclient import TestClient
from harness import free_port
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.config import Settings, get_settings
from gpudeck.engine import kinds
from gpudeck.engine.command import TOKEN_ENV, job_processes
from gpudeck.schemas.advice import format_bytes, nice_bytes
from gpudeck.services.cluster.sampler_store import DatabaseSamplerStore
from gpudeck.telemetry.sampler import Sampler
from gpudeck.telemetry.simulated import SimulatedProvider
from gpudeck.telemetry.stream import managed_pids

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "scripts" / "ddp_train.py"
PLAIN_EXAMPLE = REPO / "examples" / "scripts" / "plain_ddp.py"  # knows nothing of GPUDeck
SCRIPTS = REPO / "backend" / "tests" / "kinds" / "script" / "scripts"
TERMINAL = {"succeeded", "failed", "cancelled", "lost"}
MIB = 1024**2
GRACE_S = 3.0
ARGS = ["--steps", "40", "--seed", "3", "--report-every", "10"]


@pytest.fixture
def code_root(tmp_path: Path) -> Path:
    root = tmp_path / "code"
    root.mkdir()
    shutil.copy(EXAMPLE, root)
    shutil.copy(PLAIN_EXAMPLE, root)
    for script in SCRIPTS.glob("*.py"):
        shutil.copy(script, root)
    return root


@pytest.fixture
def script_worker(
    api: TestClient,
    code_root: Path,
    start_worker: Callable[..., WorkerProcess],
    monkeypatch: pytest.MonkeyPatch,
) -> WorkerProcess:
    env = {
        "GPUDECK_KIND_MODULES": "e2e_kinds,gpudeck.kinds.script",
        "GPUDECK_SCRIPT_CODE_ROOTS": str(code_root),
        "GPUDECK_SCRIPT_INTERPRETERS": f"default={sys.executable}",
        "GPUDECK_SCRIPT_ENV_ALLOWLIST": "GREETING",
        "GPUDECK_CANCEL_GRACE_S": str(GRACE_S),
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    kinds.registry.cache_clear()
    get_settings.cache_clear()
    return start_worker(**env)


def submit(api: TestClient, config: dict[str, Any], devices: list[int]) -> int:
    config = {"memory_per_device_bytes": 256 * MIB, **config}
    body = {"kind": "script", "config": config, "devices": [{"index": i} for i in devices]}
    created = api.post("/api/jobs", json=body)
    assert created.status_code == 201, created.text
    return int(created.json()["id"])


def run_dir(settings: Settings, job_id: int) -> Path:
    return settings.data_dir / "jobs" / str(job_id)


def token_of(settings: Settings, job_id: int) -> str:
    command = json.loads((run_dir(settings, job_id) / "command.json").read_text())
    return str(command["env"][TOKEN_ENV])


def wait_for(predicate: Callable[[], Any], what: str, timeout_s: float = 120) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def ranks_of(token: str, count: int) -> dict[int, int]:
    """{rank: pid} of the script's rank processes, once all `count` are up."""

    def found() -> dict[int, int] | None:
        ranks = {}
        for pid in job_processes(token):
            try:
                env = psutil.Process(pid).environ()
            except psutil.Error:
                continue
            # torchrun gives its workers these; the agent and the guard have neither.
            if "LOCAL_RANK" in env and "TORCHELASTIC_RUN_ID" in env:
                ranks[int(env["RANK"])] = pid
        return ranks if len(ranks) == count else None

    return dict(wait_for(found, f"{count} ranks"))


def assert_nothing_left(settings: Settings, job_id: int, token: str) -> None:
    assert wait_for(lambda: not job_processes(token), "the job's processes to go", 15)
    pgid = launch_record(settings, job_id)["pgid"]
    with pytest.raises(ProcessLookupError):
        os.killpg(pgid, 0)


def plain_torchrun_loss(tmp_path: Path, script: Path = EXAMPLE, args: list[str] = ARGS) -> float:
    port = free_port()
    command = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "2"]
    command += ["--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}"]
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1"}
    env.pop("GPUDECK_METRICS_FILE", None)
    done = subprocess.run(
        [*command, str(script), *args], env=env, cwd=tmp_path, capture_output=True, timeout=300
    )
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    return float(re.findall(rb"final_loss (\S+)", done.stdout)[-1])


def final_loss(settings: Settings, job_id: int) -> float:
    text = (run_dir(settings, job_id) / "rank0.log").read_text()
    return float(re.findall(r"final_loss (\S+)", text)[-1])


def test_a_script_that_knows_nothing_of_gpudeck_runs_unchanged_and_matches_plain_torchrun(
    api: TestClient, script_worker: WorkerProcess, e2e_settings: Settings, tmp_path: Path
) -> None:
    args = ["--steps", "40", "--seed", "3"]
    expected = plain_torchrun_loss(tmp_path, PLAIN_EXAMPLE, args)
    job_id = submit(api, {"entrypoint": "plain_ddp.py", "args": args}, [4, 5])
    job = wait_status(api, job_id, TERMINAL)
    assert job["status"] == "succeeded", job["error"]
    assert abs(final_loss(e2e_settings, job_id) - expected) <= 1e-6
    assert_nothing_left(e2e_settings, job_id, token_of(e2e_settings, job_id))


def test_the_example_runs_unchanged_and_matches_plain_torchrun(
    api: TestClient, script_worker: WorkerProcess, e2e_settings: Settings, tmp_path: Path
) -> None:
    expected = plain_torchrun_loss(tmp_path)
    config = {"entrypoint": "ddp_train.py", "args": [*ARGS, "--checkpoint-every", "20"]}
    job_id = submit(api, config, [2, 3])
    with api.websocket_connect(f"/ws/jobs/{job_id}") as ws:
        live: list[int] = []
        while len(live) < 4:
            frame = ws.receive_json()
            if frame.get("type") == "metrics":
                live.append(int(frame["data"]["step"]))
    assert live == [10, 20, 30, 40]
    job = wait_status(api, job_id, TERMINAL)
    assert job["status"] == "succeeded", job["error"]
    assert abs(final_loss(e2e_settings, job_id) - expected) <= 1e-6

    points = api.get(f"/api/jobs/{job_id}/metrics").json()["items"]
    assert [p["step"] for p in points] == [10, 20, 30, 40]
    assert points[-1]["metrics"]["loss"] < points[0]["metrics"]["loss"]
    assert (job["progress"]["step"], job["progress"]["total"]) == (40, 40)
    listed = api.get(f"/api/jobs/{job_id}/checkpoints").json()
    assert [c["step"] for c in listed] == [20, 40]
    names = [f["name"] if isinstance(f, dict) else f for f in listed[-1]["files"]]
    assert names == ["state.pt"]
    download = api.get(f"/api/jobs/{job_id}/checkpoints/40/files/state.pt")
    assert download.status_code == 200, download.text
    on_disk = e2e_settings.data_dir / "checkpoints" / str(job_id) / "step_40" / "state.pt"
    assert download.content == on_disk.read_bytes()
    assert_nothing_left(e2e_settings, job_id, token_of(e2e_settings, job_id))

    # Each rank's measured peak host memory, the limit it ran under, and what to declare next.
    memory = job["rank_memory"]
    assert [r["rank"] for r in memory["ranks"]] == [0, 1]
    assert memory["host_limit_bytes"] == e2e_settings.host_memory_max_bytes
    assert not memory["exceeded"]
    peak = max(r["host_peak_rss_bytes"] for r in memory["ranks"])
    assert job["peak_memory_bytes"] >= peak > 0
    measured = job["peak_memory_bytes"]
    if measured > 256 * MIB:  # torch on CPU: more than the 256 MiB this test declared
        expected_advice = f"declare {format_bytes(nice_bytes(measured * 1.25))}"
    else:
        expected_advice = f"{format_bytes(nice_bytes(measured * 1.25))} would do"
    assert any(expected_advice in line for line in job["advice"]), job["advice"]


def test_a_resumed_script_job_gets_its_checkpoint(
    api: TestClient, script_worker: WorkerProcess, e2e_settings: Settings
) -> None:
    """Cancelled after a checkpoint, the job resumes from it: $GPUDECK_RESUME_DIR is the newest
    one. A job is resumed once, and a training job that succeeded is not (it ran all its
    steps): one rule for the API, the CLI and the dashboard."""
    args = ["--steps", "60", "--seed", "3", "--report-every", "5", "--checkpoint-every", "20"]
    config = {"entrypoint": "ddp_train.py", "args": [*args, "--sleep-s", "0.2"]}
    first = submit(api, config, [0, 1])
    wait_for(lambda: api.get(f"/api/jobs/{first}/checkpoints").json(), "a checkpoint")
    api.post(f"/api/jobs/{first}/cancel")
    assert wait_status(api, first, TERMINAL)["status"] == "cancelled"
    saved = api.get(f"/api/jobs/{first}/checkpoints").json()[-1]["step"]
    resumed = api.post(f"/api/jobs/{first}/resume")
    assert resumed.status_code == 201, resumed.text
    again = api.post(f"/api/jobs/{first}/resume")
    assert again.status_code == 409 and f"by job {resumed.json()['id']}" in again.text
    job = wait_status(api, resumed.json()["id"], TERMINAL)
    assert job["status"] == "succeeded", job["error"]
    log = (run_dir(e2e_settings, job["id"]) / "rank0.log").read_text()
    assert f"resumed from step {saved}" in log
    done = api.post(f"/api/jobs/{job['id']}/resume")
    assert done.status_code == 409 and "ran all its steps" in done.text


def test_arguments_and_environment_arrive_as_given(
    api: TestClient, script_worker: WorkerProcess, e2e_settings: Settings, tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    args = ["$(touch " + str(marker) + ")", f"a; touch {marker}", "`id`", "|", "*", "--x=1 2"]
    config = {"entrypoint": "echo_args.py", "args": args, "env": {"GREETING": "hello"}}
    job_id = submit(api, config, [1])
    job = wait_status(api, job_id, TERMINAL)
    assert job["status"] == "succeeded", job["error"]
    seen = json.loads((e2e_settings.data_dir / "checkpoints" / "argv.json").read_text())
    assert seen["argv"] == args and not marker.exists()
    env = seen["env"]
    assert env["GREETING"] == "hello" and env["GPUDECK_JOB_ID"] == str(job_id)
    assert env["CUDA_VISIBLE_DEVICES"] == "" and env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert env["GPUDECK_CHECKPOINT_DIR"].endswith(f"checkpoints/{job_id}")
    assert seen["database_url"] is None  # nothing of the worker's settings leaks in


def test_a_rank_that_raises_fails_the_job_with_its_traceback(
    api: TestClient, script_worker: WorkerProcess, e2e_settings: Settings
) -> None:
    args = ["--steps", "1000", "--fail-rank", "1", "--fail-at-step", "5"]
    job_id = submit(api, {"entrypoint": "ddp_train.py", "args": args}, [4, 5])
    job = wait_status(api, job_id, TERMINAL)
    assert job["status"] == "failed"
    assert job["error"].startswith("rank 1 failed"), job["error"]
    assert job["failed_rank"] == 1  # the job page opens its log
    assert "ValueError: rank 1 failed on purpose at step 5" in job["error"]
    assert 'ddp_train.py", line' in job["error"]  # the traceback, from the error file
    assert_nothing_left(e2e_settings, job_id, token_of(e2e_settings, job_id))


def test_cancel_mid_run_stops_every_process(
    api: TestClient,
    script_worker: WorkerProcess,
    e2e_settings: Settings,
    redis_client: redis.Redis,
    session_factory: sessionmaker[Session],
) -> None:
    args = ["--steps", "100000", "--sleep-s", "0.05", "--report-every", "5"]
    job_id = submit(api, {"entrypoint": "ddp_train.py", "args": args}, [0, 1])
    wait_status(api, job_id, {"running"})
    wait_for(lambda: api.get(f"/api/jobs/{job_id}/metrics").json()["items"], "metrics")
    token = token_of(e2e_settings, job_id)
    ranks = ranks_of(token, 2)
    # The ranks torchrun started are registered for the sampler: each device shows its rank.
    node = e2e_settings.node_name
    expected = {pid: (job_id, rank, "script") for rank, pid in ranks.items()}

    def registered() -> bool:
        found = managed_pids(redis_client, node)
        return {p: owner for p, owner in found.items() if owner[1] is not None} == expected

    wait_for(registered, "the rank PIDs to be registered", 15)
    provider = SimulatedProvider(e2e_settings.simulated, node)
    store = DatabaseSamplerStore(session_factory)
    sample = Sampler(provider, node=node, redis_client=redis_client, store=store).tick()
    for index, rank in ((0, 0), (1, 1)):
        [process] = sample.devices[index].processes
        seen = (process.pid, process.job_id, process.kind, process.rank)
        assert seen == (ranks[rank], job_id, "script", rank)
    assert api.post(f"/api/jobs/{job_id}/cancel").status_code == 200
    job = wait_status(api, job_id, TERMINAL, timeout_s=60)
    assert job["status"] == "cancelled", job["error"]
    assert_nothing_left(e2e_settings, job_id, token)
    assert managed_pids(redis_client, node) == {}
    # The script's SIGTERM handler wrote a final checkpoint within the grace period.
    assert api.get(f"/api/jobs/{job_id}/checkpoints").json()


def test_a_script_that_ignores_sigterm_is_killed_after_the_grace_period(
    api: TestClient, script_worker: WorkerProcess, e2e_settings: Settings
) -> None:
    job_id = submit(api, {"entrypoint": "ignore_sigterm.py"}, [6, 7])
    wait_status(api, job_id, {"running"})
    token = token_of(e2e_settings, job_id)
    ranks = ranks_of(token, 2)
    cancelled_at = time.monotonic()
    assert api.post(f"/api/jobs/{job_id}/cancel").status_code == 200
    time.sleep(GRACE_S / 2)
    assert all(psutil.pid_exists(pid) for pid in ranks.values())  # they ignored SIGTERM
    job = wait_status(api, job_id, TERMINAL, timeout_s=60)
    assert job["status"] == "cancelled"
    assert time.monotonic() - cancelled_at >= GRACE_S
    assert_nothing_left(e2e_settings, job_id, token)


def test_sigkill_of_a_rank_fails_the_job_and_leaves_nothing(
    api: TestClient, script_worker: WorkerProcess, e2e_settings: Settings
) -> None:
    args = ["--steps", "100000", "--sleep-s", "0.05"]
    job_id = submit(api, {"entrypoint": "ddp_train.py", "args": args}, [2, 3])
    wait_status(api, job_id, {"running"})
    token = token_of(e2e_settings, job_id)
    os.kill(ranks_of(token, 2)[1], signal.SIGKILL)
    job = wait_status(api, job_id, TERMINAL)
    assert job["status"] == "failed"
    assert job["error"].startswith("rank 1 failed"), job["error"]
    assert "SIGKILL" in job["error"]
    assert_nothing_left(e2e_settings, job_id, token)


def test_sigkill_of_the_torchrun_agent_leaves_no_rank(
    api: TestClient, script_worker: WorkerProcess, e2e_settings: Settings
) -> None:
    args = ["--steps", "100000", "--sleep-s", "0.05"]
    job_id = submit(api, {"entrypoint": "ddp_train.py", "args": args}, [4, 5])
    wait_status(api, job_id, {"running"})
    token = token_of(e2e_settings, job_id)
    ranks = ranks_of(token, 2)
    guard = psutil.Process(launch_record(e2e_settings, job_id)["pgid"])
    (agent,) = guard.children()
    assert "torch.distributed.run" in agent.cmdline()
    agent.send_signal(signal.SIGKILL)
    job = wait_status(api, job_id, TERMINAL)
    assert job["status"] == "failed"
    assert "SIGKILL" in job["error"], job["error"]
    assert not any(psutil.pid_exists(pid) for pid in ranks.values())
    assert_nothing_left(e2e_settings, job_id, token)


def test_sigkill_of_the_gpudeck_worker_leaves_no_process_of_the_job(
    api: TestClient, script_worker: WorkerProcess, e2e_settings: Settings
) -> None:
    args = ["--steps", "100000", "--sleep-s", "0.05"]
    job_id = submit(api, {"entrypoint": "ddp_train.py", "args": args}, [6, 7])
    wait_status(api, job_id, {"running"})
    token = token_of(e2e_settings, job_id)
    ranks_of(token, 2)
    script_worker.proc.send_signal(signal.SIGKILL)  # the worker alone, not its group
    script_worker.proc.wait()
    # The guard sees the lifeline pipe close and kills the agent and every rank.
    assert wait_for(lambda: not job_processes(token), "the job's processes to go", 15)


def test_a_job_past_its_host_memory_limit_fails_naming_it_and_leaves_nothing(
    api: TestClient, script_worker: WorkerProcess, e2e_settings: Settings
) -> None:
    # 1 GiB for 2 ranks: each process may hold 512 MiB of data.
    # - alone: rank 1's own allocations fail past its share (the per-process bound);
    # - children: three children of rank 1 take 400 MiB each, every process under its share,
    #   the job's total past 1 GiB: the guard kills the whole job.
    limit = {"entrypoint": "hog_memory.py", "host_memory_bytes": 1024 * MIB}
    alone = submit(api, {**limit, "args": ["--hog-rank", "1"]}, [0, 1])
    args = ["--hog-rank", "1", "--children", "3", "--most-mib", "400"]
    children = submit(api, {**limit, "args": args}, [2, 3])
    for job_id in (alone, children):
        job = wait_status(api, job_id, TERMINAL)
        assert job["status"] == "failed"
        assert job["error_summary"].startswith("host memory limit 1 GiB exceeded by rank 1"), job
        assert job["rank_memory"]["exceeded"] and job["rank_memory"]["host_limit_bytes"] == 1 << 30
        assert any("passed its host memory limit of 1 GiB" in a for a in job["advice"])
        assert_nothing_left(e2e_settings, job_id, token_of(e2e_settings, job_id))
    assert "MemoryError" in api.get(f"/api/jobs/{alone}").json()["error"]
    assert "together held more" in api.get(f"/api/jobs/{children}").json()["error"]
    # Their devices are free again: the same four take a new job at once.
    assert submit(api, {"entrypoint": "echo_args.py"}, [0, 1, 2, 3])
