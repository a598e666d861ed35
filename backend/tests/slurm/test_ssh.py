"""A cluster reached over SSH (`access: ssh`): a real sshd on 127.0.0.1 as the login node
(sshd.py) in front of the real test cluster. Jobs are submitted (sbatch's script on ssh's
stdin) and polled through it; a frozen or dead login node reads unreachable and jobs `unknown`,
never failed, with the API answering within 2 s; a host key other than known_hosts' and a key
others may read are refused naming the field; an argv reaches the remote side intact."""

from __future__ import annotations

import shutil
import statistics
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from cli_harness import Cli
from fastapi.testclient import TestClient
from harness import live_server
from slurm.cluster import NODES, PARTITION, SlurmCluster
from slurm.executor_cases import SAE_CONFIG, TERMINAL, wait_job
from slurm.helpers import ended, gate, wait_for
from slurm.sshd import LoginNode, running_login_node
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gpudeck.core.config import Settings
from gpudeck.models import Cluster
from gpudeck.scheduler.slurm_pass import SlurmExecutor
from gpudeck.services.submit import cluster_target
from gpudeck.slurm import BatchSpec, LocalRunner, SlurmClient, SlurmUnreachable, render
from gpudeck.slurm.ssh import HostKeyRejected, SshRunner, control_dir_fits
from gpudeck.slurm.ssh import _failure as ssh_failure

API_BOUND_S = 2.0


def runner(node: LoginNode, cluster: SlurmCluster | None, *, control: bool = True) -> SshRunner:
    return SshRunner(
        node.user_host, node.client_key, node.known_hosts, port=node.port,
        slurm_conf=None if cluster is None else str(cluster.conf),
        control_dir=node.control_dir if control else None,
    )  # fmt: skip


def ssh_body(node: LoginNode, cluster: SlurmCluster, shared: Path, **fields: Any) -> dict:
    return {
        "name": "lab", "partitions": [PARTITION], "shared_dir": str(shared),
        "slurm_conf": str(cluster.conf), "access": "ssh", "ssh_host": node.user_host,
        "ssh_port": node.port, "ssh_key_path": str(node.client_key),
        "known_hosts_path": str(node.known_hosts), **fields,
    }  # fmt: skip


@pytest.fixture(scope="module")
def login_node() -> Iterator[LoginNode]:
    with running_login_node() as node:
        yield node


@pytest.fixture
def ssh_lab(
    client: TestClient, slurm_cluster: SlurmCluster, login_node: LoginNode, settings: Settings
) -> Iterator[str]:
    cluster_target.FACTS.forget()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    added = client.post(
        "/api/clusters", json=ssh_body(login_node, slurm_cluster, settings.data_dir)
    )
    assert added.status_code == 201, added.text
    yield "lab"
    cluster_target.FACTS.forget()


def test_a_silent_login_node_is_one_sentence_naming_it_and_its_jobs_read_unknown() -> None:
    def refused(argv: Sequence[str], *, input_text: str | None = None, timeout_s: float) -> Any:
        stderr = "ssh: connect to host login.lab port 2222: Connection refused\r\n"
        raise ssh_failure("gpudeck@login.lab:2222", Path("/srv/known_hosts"), stderr)

    [state] = SlurmClient(refused).poll(["7"]).values()
    assert state.state == "unknown"
    said = "login node gpudeck@login.lab:2222 did not answer over ssh (Connection refused)"
    assert state.reason == said


def test_an_argv_with_spaces_quotes_and_semicolons_arrives_intact(login_node: LoginNode) -> None:
    argv = ["a b", "it's", 'say "hi"', "x; touch /tmp/gd-ssh-pwned", "$HOME", "`id`", "*", ""]
    done = runner(login_node, None)(["printf", "%s\\n", *argv], timeout_s=10)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:-1] == argv
    assert not Path("/tmp/gd-ssh-pwned").exists()
    piped = runner(login_node, None)(["cat"], input_text="line 1\n#SBATCH x\n", timeout_s=10)
    assert piped.stdout == "line 1\n#SBATCH x\n"  # stdin reaches the remote command


def test_a_job_is_submitted_and_polled_over_ssh(
    login_node: LoginNode, slurm_cluster: SlurmCluster, spec_for: Callable[..., BatchSpec],
    tmp_path: Path,
) -> None:  # fmt: skip
    slurm = SlurmClient(runner(login_node, slurm_cluster), timeout_s=20)
    spec = spec_for(["sh", "-c", f"echo ran > {tmp_path / 'out'}"], gpus_per_node=1)
    job = slurm.submit(render(spec))  # sbatch --parsable, the script on ssh's stdin
    states = wait_for(slurm, [job], ended)
    assert states[job].state == "succeeded", states
    assert (tmp_path / "out").read_text() == "ran\n"
    assert {p.name for p in slurm.partitions()} >= {PARTITION}
    assert sorted(n.name for n in slurm.nodes()) == sorted(NODES)

    # What a poll costs: here, over ssh with a connection per command, and with one kept open.
    runners = {
        "local": LocalRunner(slurm_cluster.env),
        "ssh": runner(login_node, slurm_cluster, control=False),
        "ssh + ControlMaster": runner(login_node, slurm_cluster),
    }
    took: dict[str, list[float]] = {name: [] for name in runners}
    for _ in range(10):
        for name, run in runners.items():
            started = time.monotonic()
            assert SlurmClient(run, timeout_s=20).poll([job])[job].state == "succeeded"
            took[name].append(time.monotonic() - started)
    medians = ", ".join(f"{name} {statistics.median(t):.3f} s" for name, t in took.items())
    print(f"\na poll (squeue + sacct), median of 10: {medians}")


def test_a_host_key_not_in_known_hosts_is_refused_naming_it_without_a_prompt(
    client: TestClient, login_node: LoginNode, slurm_cluster: SlurmCluster, tmp_path: Path,
    db: Session,
) -> None:  # fmt: skip
    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    kind, key = other.with_suffix(".pub").read_text().split()[:2]
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"[127.0.0.1]:{login_node.port} {kind} {key}\n")

    lying = SshRunner(login_node.user_host, login_node.client_key, wrong, port=login_node.port)
    started = time.monotonic()
    with pytest.raises(HostKeyRejected, match="host key"):
        lying(["true"], timeout_s=10)
    assert time.monotonic() - started < 5  # BatchMode: no prompt waits for an answer

    body = ssh_body(login_node, slurm_cluster, tmp_path, known_hosts_path=str(wrong))
    refused = client.post("/api/clusters", json=body)
    assert refused.status_code == 422, refused.text
    [error] = refused.json()["detail"]
    assert error["loc"][-1] == "known_hosts_path"
    assert "host key" in error["msg"] and str(wrong) in error["msg"]
    assert db.scalar(select(func.count()).select_from(Cluster)) == 0


@pytest.mark.parametrize(
    ("change", "loc", "words"),
    [
        ("key_0644", "ssh_key_path", "readable by its group or others"),
        ("key_missing", "ssh_key_path", "no file"),
        ("key_dir", "ssh_key_path", "not a regular file"),
        ("no_host", "ssh_host", "required with access 'ssh'"),
        ("bad_host", "ssh_host", ""),
        ("bad_port", "ssh_port", ""),
        ("local_with_host", "ssh_host", "only with access 'ssh'"),
    ],
)
def test_bad_ssh_input_is_a_422_naming_the_field(
    client: TestClient, login_node: LoginNode, slurm_cluster: SlurmCluster, tmp_path: Path,
    db: Session, change: str, loc: str, words: str,
) -> None:  # fmt: skip
    key = tmp_path / "id_ed25519"
    shutil.copy(login_node.client_key, key)
    key.chmod(0o600)
    body = ssh_body(login_node, slurm_cluster, tmp_path, ssh_key_path=str(key))
    if change == "key_0644":
        key.chmod(0o644)
    body.update({
        "key_missing": {"ssh_key_path": str(tmp_path / "nokey")},
        "key_dir": {"ssh_key_path": str(tmp_path)},
        "no_host": {"ssh_host": None},
        "bad_host": {"ssh_host": "-oProxyCommand=touch@x"},
        "bad_port": {"ssh_port": 0},
        "local_with_host": {"access": "local"},
    }.get(change, {}))  # fmt: skip
    refused = client.post("/api/clusters", json=body)
    assert refused.status_code == 422, refused.text
    assert any(e["loc"][-1] == loc and words in e["msg"] for e in refused.json()["detail"]), (
        refused.json()
    )
    assert db.scalar(select(func.count()).select_from(Cluster)) == 0


def test_an_ssh_cluster_shows_its_access_and_host_never_its_key(
    client: TestClient, ssh_lab: str, login_node: LoginNode
) -> None:
    shown = client.get(f"/api/clusters/{ssh_lab}").json()
    assert (shown["access"], shown["ssh_host"], shown["ssh_port"]) == (
        "ssh", login_node.user_host, login_node.port,
    )  # fmt: skip
    assert "ssh_key_path" not in shown and str(login_node.client_key) not in str(shown)
    state = client.get(f"/api/clusters/{ssh_lab}/state").json()
    assert state["reachable"] and sorted(n["name"] for n in state["nodes"]) == sorted(NODES)


def test_the_api_keeps_its_ssh_connections_under_its_own_data_dir(
    client: TestClient, settings: Settings, ssh_lab: str
) -> None:
    control = settings.data_dir / "ssh"
    assert client.app.state.slurm_clients.ssh_control_dir == control  # type: ignore[attr-defined]
    assert client.get(f"/api/clusters/{ssh_lab}/state").json()["reachable"]
    if control_dir_fits(control):
        assert [p.is_socket() for p in control.iterdir()] == [True]  # the login node's master


def test_an_sae_job_on_an_ssh_cluster_succeeds(
    client: TestClient, ssh_lab: str, executor: SlurmExecutor
) -> None:
    sent = client.post(
        "/api/jobs", json={"kind": "sae", "config": SAE_CONFIG, "count": 1, "cluster": ssh_lab}
    )
    assert sent.status_code == 201, sent.text
    job = wait_job(client, sent.json()["id"], TERMINAL)
    assert job["status"] == "succeeded", job
    assert job["slurm"]["state"] == "COMPLETED"


def test_a_frozen_then_dead_login_node_reads_unknown_never_failed(
    client: TestClient, ssh_lab: str, login_node: LoginNode, slurm_cluster: SlurmCluster,
    spec_for: Callable[..., BatchSpec], tmp_path: Path,
) -> None:  # fmt: skip
    slurm = SlurmClient(runner(login_node, slurm_cluster), timeout_s=1)
    release = tmp_path / "release"
    job = slurm.submit(render(spec_for(["sh", "-c", gate(release)])))
    try:
        wait_for(slurm, [job], lambda s: s[job].state == "running")
        login_node.pause()  # SIGSTOP: the listener and every open connection
        try:
            frozen = slurm.poll([job])[job]
            started = time.monotonic()
            answer = client.get(f"/api/clusters/{ssh_lab}/state")
            took_s = time.monotonic() - started
            with pytest.raises(SlurmUnreachable):
                slurm.submit("#!/bin/sh\ntrue\n")
        finally:
            login_node.resume()
        assert frozen.state == "unknown" and "did not answer" in (frozen.reason or ""), frozen
        assert answer.status_code == 200 and took_s < API_BOUND_S, (answer.status_code, took_s)
        assert answer.json()["reachable"] is False
        assert "did not answer" in answer.json()["cause"]
        assert wait_for(slurm, [job], lambda s: s[job].state == "running")

        login_node.stop()  # connection refused: ssh exits 255, not Slurm's error
        try:
            dead = slurm.poll([job])[job]
            started = time.monotonic()
            answer = client.get(f"/api/clusters/{ssh_lab}/state")
            took_s = time.monotonic() - started
        finally:
            login_node.launch()
        assert dead.state == "unknown", dead
        where = f"{login_node.user_host}:{login_node.port}"
        assert dead.reason == f"login node {where} did not answer over ssh (Connection refused)"
        assert answer.json()["reachable"] is False and took_s < API_BOUND_S, took_s
    finally:
        release.touch()
    assert wait_for(slurm, [job], ended)[job].state == "succeeded"


def test_add_and_list_an_ssh_cluster_from_the_cli(
    settings: Settings, admin_token: str, login_node: LoginNode, slurm_cluster: SlurmCluster,
    tmp_path: Path,
) -> None:  # fmt: skip
    cluster_target.FACTS.forget()
    add = [
        "clusters", "add", "slurm", "--name", "lab", "--partition", PARTITION,
        "--shared-dir", str(tmp_path), "--slurm-conf", str(slurm_cluster.conf),
        "--ssh", login_node.user_host, "--ssh-port", str(login_node.port),
        "--ssh-key", str(login_node.client_key), "--known-hosts", str(login_node.known_hosts),
    ]  # fmt: skip
    with live_server(settings) as url:
        cli = Cli(url, admin_token, tmp_path)
        added = cli(*add)
        assert added.returncode == 0, added.stderr
        assert f"cluster lab added: partitions {PARTITION}" in added.stdout
        [lab] = cli_json(cli, "clusters", "list", "--json")
        assert (lab["access"], lab["ssh_host"]) == ("ssh", login_node.user_host)
        assert lab["state"]["reachable"] is True
        text = cli("clusters", "list").stdout
        assert "ssh" in text and "unreachable" not in text
        cli("clusters", "remove", "lab")


def cli_json(cli: Cli, *args: str) -> Any:
    import json

    done = cli(*args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)
