"""Two nodes on one machine as separate hosts. Each node (`gpudeck node`: its worker and its
sampler, admitted by the token `gpudeck nodes add` issued) runs in a network namespace of its own
(tests/e2e/netns.py), with its own data directory and node name, both against the test's one
Postgres and Redis. A job across the two nodes trains as one job on one node does, a torchrun
script spans them, and killing one node's worker ends the job everywhere.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import netns
import psutil
import pytest
import torch
from e2e_helpers import BACKEND, LEASE_S, WorkerProcess, rank_alive, wait_status, worker_env
from fastapi.testclient import TestClient
from safetensors.torch import load_file
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.cli.nodes import TOKEN_ENV
from gpudeck.core.config import Settings, get_settings
from gpudeck.core.linux import die_with_parent
from gpudeck.core.redis import sync_client
from gpudeck.engine import kinds
from gpudeck.engine.events import decode
from gpudeck.services.cluster.nodes import issue_token
from gpudeck.services.jobs.events import job_stream

WHY_NOT = netns.available()
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")

REPO = BACKEND.parent
EXAMPLE = REPO / "examples" / "scripts" / "ddp_train.py"
MIB = 1024**2
TERMINAL = {"succeeded", "failed", "cancelled", "lost", "timeout"}
# node-a is the first node of the jobs across nodes; node-b also holds the one-node reference run,
# and each keeps a device for the script job, which runs alongside the SAE jobs.
DEVICES = {"node-a": 3, "node-b": 7}
SAE_CONFIG: dict[str, Any] = {
    "d_in": 16,
    "d_sae": 64,
    "batch_size": 64,
    "steps": 30,
    "metrics_interval": 10,
    "checkpoint_interval": 30,
    "seed": 1,
    "dataset": {
        "type": "synthetic",
        "num_features": 32,
        "active_features": 3,
        "num_samples": 100_000,
    },
}


@dataclass
class Node:
    name: str
    address: str
    data_dir: Path
    process: WorkerProcess  # `gpudeck node`: its worker and its sampler
    namespace: str  # its network namespace (tests/e2e/netns.py)

    def run_dir(self, job_id: int) -> Path:
        return self.data_dir / "jobs" / str(job_id)

    def worker_pid(self) -> int:
        children = psutil.Process(self.process.proc.pid).children()
        return next(c.pid for c in children if "worker" in c.cmdline())


def node_urls(settings: Settings, forwarder: netns.Forwarder) -> tuple[str, str]:
    """The test's database and Redis URLs as a node reaches them: through the forwarder on the
    bridge (the stores listen on loopback or on a Unix socket, both out of a namespace's reach)."""
    database = make_url(str(settings.database_url))
    socket_dir = database.query.get("host")  # an embedded Postgres: its socket's directory
    if isinstance(socket_dir, str) and socket_dir.startswith("/"):
        target: netns.Target = f"{socket_dir}/.s.PGSQL.{database.port or 5432}"
        database = database.difference_update_query(["host"])
    else:
        target = (database.host or "127.0.0.1", database.port or 5432)
    database = database.set(host=forwarder.host, port=forwarder.forward(target))
    redis_url = urlsplit(str(settings.redis_url))
    if redis_url.scheme == "unix":  # an embedded Redis: unix:///path?db=N
        db = parse_qs(redis_url.query).get("db", ["0"])[0]
        port = forwarder.forward(redis_url.path)
    else:
        db = redis_url.path.strip("/") or "0"
        port = forwarder.forward((redis_url.hostname or "127.0.0.1", redis_url.port or 6379))
    return database.render_as_string(hide_password=False), f"redis://{forwarder.host}:{port}/{db}"


def _spawn(hosts: netns.Hosts, node: str, args: list[str], env: dict[str, str], log: Path) -> Any:

    with log.open("wb") as out:
        proc = subprocess.Popen(
            hosts.command(node, [sys.executable, "-m", "gpudeck", *args]),
            cwd=BACKEND,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=lambda: die_with_parent(15),
        )
    return WorkerProcess(proc, log)


@pytest.fixture
def cluster(
    settings: Settings,
    session_factory: sessionmaker[Session],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[dict[str, Node]]:
    code_root = tmp_path / "code"
    code_root.mkdir()
    shutil.copy(EXAMPLE, code_root)
    script_env = {
        "GPUDECK_KIND_MODULES": "gpudeck.kinds.script",
        "GPUDECK_SCRIPT_CODE_ROOTS": str(code_root),
        "GPUDECK_SCRIPT_INTERPRETERS": f"default={sys.executable}",
    }
    for name, value in script_env.items():
        monkeypatch.setenv(name, value)
    kinds.registry.cache_clear()
    get_settings.cache_clear()
    hosts = netns.Hosts(list(DEVICES))
    hosts.up()
    forwarder = netns.Forwarder(hosts.gateway)
    started: list[WorkerProcess] = []
    try:
        database_url, redis_url = node_urls(settings, forwarder)
        nodes = {}
        for name, count in DEVICES.items():
            data_dir = tmp_path / name
            env = worker_env(
                settings,
                **script_env,
                GPUDECK_DATABASE_URL=database_url,
                GPUDECK_REDIS_URL=redis_url,
                GPUDECK_DATA_DIR=str(data_dir),
                GPUDECK_NODE_NAME=name,
                GPUDECK_NODE_ADDRESS=hosts.address[name],
                GPUDECK_SIMULATED_DEVICES=f"{count}x80GiB",
            )
            with session_factory() as session:
                env[TOKEN_ENV] = issue_token(session, name)  # `gpudeck nodes add <name>`
                session.commit()
            process = _spawn(hosts, name, ["node"], env, tmp_path / f"{name}.log")
            started.append(process)
            nodes[name] = Node(name, hosts.address[name], data_dir, process, hosts.namespace[name])
        for node in nodes.values():
            node.process.wait_ready()
        yield nodes
    finally:
        for part in started:
            part.stop(timeout_s=30)
        forwarder.close()
        hosts.down()
        kinds.registry.cache_clear()
        get_settings.cache_clear()


def wait_devices(api: TestClient, expected: int, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while len(api.get("/api/gpus").json()) < expected:
        assert time.monotonic() < deadline, "the nodes' samplers registered no devices"
        time.sleep(0.2)


def submit(
    api: TestClient, kind: str, config: dict[str, Any], devices: list[tuple[str, int]]
) -> int:
    body = {
        "kind": kind,
        "config": config,
        "devices": [{"node": node, "index": index} for node, index in devices],
    }
    created = api.post("/api/jobs", json=body)
    assert created.status_code == 201, created.text
    return int(created.json()["id"])


def final_weights(node: Node, job_id: int) -> dict[str, torch.Tensor]:
    steps = sorted(
        (node.data_dir / "checkpoints" / str(job_id)).glob("step_*"),
        key=lambda p: int(p.name.removeprefix("step_")),
    )
    return load_file(steps[-1] / "sae_weights.safetensors")


def rank_pids(nodes: dict[str, Node], job_id: int) -> list[int]:
    import json

    pids = []
    for node in nodes.values():
        record = node.run_dir(job_id) / "launch.json"
        if record.exists():
            pids += json.loads(record.read_text())["pids"]
    return pids


def wait_leading(scheduler: WorkerProcess, timeout_s: float = 120) -> None:
    """Until the scheduler leads (and so reaps): it imports torch first, slow under load."""
    deadline = time.monotonic() + timeout_s
    while "now the active one" not in scheduler.log():
        assert scheduler.proc.poll() is None, scheduler.log()[-3000:]
        assert time.monotonic() < deadline, scheduler.log()[-3000:]
        time.sleep(0.1)


def wait_free(api: TestClient, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while held := [g for g in api.get("/api/gpus").json() if g["held_by"]]:
        assert time.monotonic() < deadline, held
        time.sleep(0.1)


def wait_running_everywhere(api: TestClient, follower: Node, job_id: int) -> None:
    """Running, with ranks on the second node too, and past the rendezvous (a metric came)."""
    wait_status(api, job_id, {"running"}, timeout_s=60)
    deadline = time.monotonic() + 60
    metrics = f"/api/jobs/{job_id}/metrics"
    while (
        not (follower.run_dir(job_id) / "launch.json").exists()
        or not (api.get(metrics).json()["items"])
    ):
        assert time.monotonic() < deadline, f"job {job_id} never trained on both nodes"
        time.sleep(0.1)


@pytest.mark.long
def test_two_nodes_train_as_one_run_a_torchrun_script_and_end_together(
    client: TestClient,
    cluster: dict[str, Node],
    settings: Settings,
    start_scheduler: Callable[..., WorkerProcess],
) -> None:
    a, b = cluster["node-a"], cluster["node-b"]
    wait_devices(client, sum(DEVICES.values()))
    wait_leading(start_scheduler())  # its reaper frees a dead node's part after the lease
    listed = {n["name"]: n for n in client.get("/api/nodes").json()}
    assert {n: (v["address"], v["online"]) for n, v in listed.items()} == {
        "node-a": (a.address, True),
        "node-b": (b.address, True),
    }

    # 2 nodes x 2 ranks against 1 node x 4 ranks: the same global ranks, the same weights;
    # meanwhile a torchrun script across the two nodes (static rendezvous on node-a's address).
    across = submit(
        client, "sae", SAE_CONFIG, [("node-a", 0), ("node-a", 1), ("node-b", 0), ("node-b", 1)]
    )
    alone = submit(client, "sae", SAE_CONFIG, [("node-b", i) for i in range(2, 6)])
    config = {"entrypoint": "ddp_train.py", "args": ["--steps", "20", "--seed", "3"]}
    config["memory_per_device_bytes"] = 256 * MIB
    script = submit(client, "script", config, [("node-a", 2), ("node-b", 6)])
    for job_id in (across, alone, script):
        job = wait_status(client, job_id, TERMINAL, timeout_s=120)
        assert job["status"] == "succeeded", job["error"]
    contract_b = (b.run_dir(across) / "contract.json").read_text()
    assert f'"master_addr": "{a.address}"' in contract_b and '"node_rank": 1' in contract_b
    assert sorted(p.name for p in b.run_dir(across).glob("rank*.log")) == [
        "rank2.log",
        "rank3.log",
    ]
    # The API runs on neither node (the test's own data directory): node-b's ranks' output
    # comes from the copy node-b's worker stored, whole, and so does torchrun's rank on node-b.
    for job_id, rank in ((across, 2), (across, 3), (script, 1)):
        served = client.get(f"/api/jobs/{job_id}/logs", params={"rank": rank, "tail": 100_000})
        assert served.status_code == 200, served.text
        assert served.text == (b.run_dir(job_id) / f"rank{rank}.log").read_text()
    assert (
        "rank 2 joined the process group"
        in client.get(f"/api/jobs/{across}/logs", params={"rank": 2}).text
    )
    # The job's WebSocket hears node-b's ranks too: their lines are on the job's stream.
    events = [
        decode(fields)
        for _, fields in sync_client(str(settings.redis_url)).xrange(job_stream(across))
    ]
    logged = {e.data.get("rank") for e in events if e.type == "log"}
    assert {0, 1, 2, 3} <= logged, logged
    # The checkpoint is on node-a's disk, which the API cannot read: the list says so, with the
    # sizes node-a saw and where to copy it from, and a download names that place (before:
    # every size 0 and a bare 404).
    listed = client.get(f"/api/jobs/{across}/checkpoints").json()
    assert listed, "no checkpoint listed"
    newest = listed[-1]
    on_a = a.data_dir.resolve() / newest["path"]
    assert newest["node"] == "node-a" and newest["location"] == f"node-a:{on_a}"
    assert {f["name"]: f["size_bytes"] for f in newest["files"]} == {
        f.name: f.stat().st_size for f in on_a.iterdir() if not f.name.startswith(".")
    }
    assert newest["size_bytes"] == sum(f["size_bytes"] for f in newest["files"]) > 0
    assert all(f["url"] is None for f in newest["files"])
    fetched = client.get(f"/api/jobs/{across}/checkpoints/{newest['step']}/files/cfg.json")
    assert fetched.status_code == 404 and f"on node node-a, in {on_a}" in fetched.text, fetched.text
    ours, reference = final_weights(a, across), final_weights(b, alone)
    assert ours.keys() == reference.keys()
    for name, tensor in ours.items():
        assert tensor.dtype == torch.float32
        assert (tensor - reference[name]).abs().max().item() <= 1e-5, name
    assert "final_loss" in (a.run_dir(script) / "rank0.log").read_text()
    assert (b.run_dir(script) / "rank1.log").exists()  # torchrun on node-b ran global rank 1

    # A cancel reaches both nodes: every rank stops at the same step, rank 0 checkpoints.
    long_config = {**SAE_CONFIG, "steps": 100_000, "checkpoint_interval": 100_000}
    four = [("node-a", 0), ("node-a", 1), ("node-b", 0), ("node-b", 1)]
    cancelled = submit(client, "sae", long_config, four)
    wait_running_everywhere(client, b, cancelled)
    assert client.post(f"/api/jobs/{cancelled}/cancel").status_code == 200
    job = wait_status(client, cancelled, TERMINAL, timeout_s=30)
    assert job["status"] == "cancelled", job
    assert final_weights(a, cancelled)  # the final checkpoint, on the first node
    assert not [g for g in client.get("/api/gpus").json() if g["held_by"]]
    assert not [p for p in rank_pids(cluster, cancelled) if rank_alive(p)]

    # Killing one node's worker mid-run ends the job on both nodes and frees all four devices.
    doomed = submit(client, "sae", long_config, four)
    wait_running_everywhere(client, b, doomed)
    killed_at = time.monotonic()
    os.kill(b.worker_pid(), 9)  # `gpudeck node` restarts it: the job must end all the same
    job = wait_status(client, doomed, TERMINAL, timeout_s=LEASE_S + 10)
    assert job["status"] in {"failed", "lost"}, job
    assert time.monotonic() - killed_at <= LEASE_S + 10
    # Node-a confirms its ranks are gone; node-b's part is released once its lease has passed.
    wait_free(client, timeout_s=2 * LEASE_S + 5)
    pids = rank_pids(cluster, doomed)
    assert len(pids) == 4
    deadline = time.monotonic() + 10
    while any(rank_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in pids if rank_alive(p)], "a rank outlived its job"


@pytest.mark.long
def test_a_job_across_nodes_waits_for_a_busy_device_then_runs_on_both(
    client: TestClient,
    cluster: dict[str, Node],
    start_scheduler: Callable[..., WorkerProcess],
) -> None:
    """Queued behind a device busy on the second node, the job holds nothing (no part of it
    starts on the first node's free devices); when that device frees, the scheduler places
    the whole job and both nodes' workers run it, as a job placed at submission."""
    a, b = cluster["node-a"], cluster["node-b"]
    wait_devices(client, sum(DEVICES.values()))
    start_scheduler()
    long_config = {**SAE_CONFIG, "steps": 100_000, "checkpoint_interval": 100_000}
    blocker = submit(client, "sae", long_config, [("node-b", 0)])
    wait_status(client, blocker, {"running"}, timeout_s=60)
    across = submit(client, "sae", SAE_CONFIG, [("node-a", 0), ("node-b", 0)])
    job = client.get(f"/api/jobs/{across}").json()
    assert job["status"] == "queued" and job["devices"] == []
    assert job["queue"]["reason"] == f"devices busy: node-b/0 held by job {blocker}"
    time.sleep(3)  # a scheduler pass or two: still nothing of it anywhere
    assert client.get(f"/api/jobs/{across}").json()["devices"] == []
    assert not a.run_dir(across).exists()

    assert client.post(f"/api/jobs/{blocker}/cancel").status_code == 200
    assert wait_status(client, blocker, TERMINAL, timeout_s=60)["status"] == "cancelled"
    job = wait_status(client, across, TERMINAL, timeout_s=120)
    assert job["status"] == "succeeded", job["error"]
    assert [(d["node"], d["index"]) for d in job["devices"]] == [("node-a", 0), ("node-b", 0)]
    contract_b = (b.run_dir(across) / "contract.json").read_text()
    assert f'"master_addr": "{a.address}"' in contract_b and '"node_rank": 1' in contract_b
    assert final_weights(a, across)  # rank 0's checkpoint, on the first node


class DeviceWatch:
    """Samples, every 10 ms, which jobs' rank processes are alive on node-a's device 0: the
    invariant is about processes, not rows (a device is given to another job only when no
    process of the last one can run on it). A job's processes are its local rank 0 (a job of
    the engine) or its guard and every process under it (a script job: torchrun, its ranks),
    each followed from the moment it is seen until it is gone."""

    def __init__(self, node: Node, jobs: list[int]) -> None:
        self.node, self.jobs = node, jobs
        self.shared: list[tuple[float, list[int]]] = []
        self.first_seen: dict[int, float] = {}  # wall-clock time
        self._seen: dict[int, set[int]] = {job_id: set() for job_id in jobs}
        self.samples = 0  # how many times it looked (said when a job was never seen)
        self.error: BaseException | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _follow(self, job_id: int) -> None:
        record = self.node.run_dir(job_id) / "launch.json"
        try:
            launched = json.loads(record.read_text())
        except (FileNotFoundError, ValueError):
            return
        roots = launched["pids"][:1]  # local rank 0: device 0; a script job: its guard
        self._seen[job_id].update(roots)
        if "command" in launched:
            with contextlib.suppress(psutil.Error):
                children = psutil.Process(roots[0]).children(recursive=True)
                self._seen[job_id].update(c.pid for c in children)

    def _run(self) -> None:
        try:
            self._sample()
        except BaseException as exc:  # a watch that stopped looking must fail the test, loudly
            self.error = exc
            raise

    def _sample(self) -> None:
        while not self._done.wait(0.01):
            self.samples += 1
            for job_id in self.jobs:
                self._follow(job_id)
            now = time.time()
            live = [j for j in self.jobs if any(rank_alive(p) for p in self._seen[j])]
            for job_id in live:
                self.first_seen.setdefault(job_id, now)
            if len(live) > 1:
                self.shared.append((now, live))

    def __enter__(self) -> DeviceWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
        assert self.error is None, f"the device watch stopped after {self.samples} samples"


def _tree(pid: int) -> list[psutil.Process]:
    root = psutil.Process(pid)
    return [root, *root.children(recursive=True)]


# A script whose node-b part exits before it joins the process group: node-a's ranks wait in
# the rendezvous for peers that never come, until the job's end kills them.
NEVER_JOINS = """\
import os, sys, time
from pathlib import Path

import torch.distributed as dist

if os.environ["GROUP_RANK"] != "0":
    Path(sys.argv[1]).write_text(str(time.time()))
    sys.exit("node-b cannot join the rendezvous")
dist.init_process_group("gloo")
"""
FAULTS = ["worker killed", "node frozen", "link down", "rendezvous failure"]


@pytest.mark.long
@pytest.mark.parametrize("fault", FAULTS)
def test_a_failed_node_never_lets_two_jobs_ranks_share_a_device(
    client: TestClient,
    cluster: dict[str, Node],
    start_scheduler: Callable[..., WorkerProcess],
    tmp_path: Path,
    fault: str,
) -> None:
    """A job across node-a and node-b loses node-b while another job waits for node-a's
    device 0: node-b's worker SIGKILLed, the whole node frozen with SIGSTOP (a hung machine),
    its link taken down (a partition: it reaches neither node-a nor Postgres and Redis), or
    its part of a script job exiting before the rendezvous (node-a's ranks wait in it). The
    ended job's node-a processes must be gone before the waiting job's start there: sampled
    every 10 ms, the two jobs' processes never live on the device at once. Before, the run
    that ended the job freed node-a's device at once and the waiting job started there while
    the ended job's ranks lived 0.7-1.7 s longer."""
    a, b = cluster["node-a"], cluster["node-b"]
    wait_devices(client, sum(DEVICES.values()))
    wait_leading(start_scheduler())  # the reaper's clock starts with its lead
    mark = tmp_path / "code" / "fault_at"
    if fault == "rendezvous failure":
        (tmp_path / "code" / "never_joins.py").write_text(NEVER_JOINS)
        config = {"entrypoint": "never_joins.py", "args": [str(mark)]}
        doomed = submit(client, "script", config, [("node-a", 0), ("node-b", 0)])
    else:
        long_config = {**SAE_CONFIG, "steps": 100_000, "checkpoint_interval": 100_000}
        doomed = submit(client, "sae", long_config, [("node-a", 0), ("node-b", 0)])
        wait_running_everywhere(client, b, doomed)
    # Long enough for the watch (every 10 ms, from the job's launch record) to see it alive: a
    # 30-step job on one thread could end before its launch record was read.
    waiting = submit(client, "sae", {**SAE_CONFIG, "steps": 500}, [("node-a", 0)])
    reason = client.get(f"/api/jobs/{waiting}").json()["queue"]["reason"]
    assert f"held by job {doomed}" in reason or f"releasing from job {doomed}" in reason, reason
    frozen: list[psutil.Process] = []
    link = ["ip", "-n", b.namespace, "link", "set", "eth0"]
    with DeviceWatch(a, [doomed, waiting]) as watch:
        at = time.time()
        if fault == "worker killed":
            os.kill(b.worker_pid(), 9)
        elif fault == "node frozen":
            frozen = _tree(b.process.proc.pid)
            for process in frozen:
                process.send_signal(signal.SIGSTOP)
        elif fault == "link down":
            subprocess.run([*link, "down"], check=True)
        try:
            ended = wait_status(client, doomed, TERMINAL, timeout_s=LEASE_S + 60)
            assert ended["status"] in {"failed", "lost"}, ended
            # The cause is node-b's, never node-a's ranks losing their peer.
            assert "node node-b: " in ended["error"].split("; then ")[0], ended["error"]
            started = wait_status(client, waiting, {"running", "succeeded"}, timeout_s=60)
            assert started["status"] in {"running", "succeeded"}, started
        finally:
            for process in frozen:
                with contextlib.suppress(psutil.NoSuchProcess):
                    process.send_signal(signal.SIGCONT)
            if fault == "link down":
                subprocess.run([*link, "up"], check=True)
        assert wait_status(client, waiting, TERMINAL, timeout_s=60)["status"] == "succeeded"
    assert not watch.shared, f"two jobs' processes on node-a/0 at once: {watch.shared[:3]}"
    if fault == "rendezvous failure":
        at = float(mark.read_text())  # when node-b's part gave up
    assert waiting in watch.first_seen, (
        f"job {waiting}'s process never seen alive in {watch.samples} samples: "
        f"followed {watch._seen}, first seen {watch.first_seen}, fault at {at}"
    )
    given = watch.first_seen[waiting] - at
    print(f"{fault}: node-a/0 given to the waiting job {given:.2f} s after the fault")
    assert given <= 2 * LEASE_S + 10
    pids = rank_pids(cluster, doomed)
    deadline = time.monotonic() + 15  # a frozen node's ranks: killed once it is thawed
    while any(rank_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in pids if rank_alive(p)], "a rank outlived its job"
    wait_free(client, timeout_s=2 * LEASE_S + 5)
