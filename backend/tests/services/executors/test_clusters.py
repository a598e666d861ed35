"""services/executors/clusters.py with Slurm's commands answered by a scripted runner: what is
stored for each answer Slurm can give (the partitions it has, an error, silence), and a cluster's
state built from `scontrol show node` or from its silence. The real cluster's tests are in
tests/slurm/test_clusters_api.py."""

from __future__ import annotations

import stat
from collections.abc import Sequence
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from gpudeck.models import Cluster
from gpudeck.schemas.clusters import ClusterCreate
from gpudeck.services.errors import InvalidInput
from gpudeck.services.executors import clusters
from gpudeck.slurm import CommandResult, CommandTimedOut, SlurmClient
from gpudeck.slurm.ssh import SshRunner

PARTITIONS = "PartitionName=gpu State=UP Nodes=g[1-2]\nPartitionName=cpu State=UP Nodes=c1\n"
NODE = (
    "NodeName=g1 CPUTot=64 CPUAlloc=8 RealMemory=512000 AllocMem=64000 State=MIXED"
    " Partitions=gpu Gres=gpu:a100:4(S:0-1) GresUsed=gpu:a100:2(IDX:1-2)\n"
)


class Scripted:
    """Answers each command by its name: stdout, or `None` for a command that never answers."""

    def __init__(self, **answers: str | None) -> None:
        self.answers, self.calls = answers, list[tuple[str, ...]]()

    def __call__(
        self, argv: Sequence[str], *, input_text: str | None = None, timeout_s: float
    ) -> CommandResult:
        self.calls.append(tuple(argv))
        key = argv[-1]  # "partition" or "node"
        if self.answers.get(key) is None:
            raise CommandTimedOut(f"{argv[0]} did not answer within {timeout_s:g} s")
        return CommandResult(tuple(argv), 0, self.answers[key] or "", "")


def client_for(runner: Scripted) -> clusters.ClientFor:
    return lambda cluster, timeout_s: SlurmClient(runner, timeout_s=timeout_s)


def body(**fields: object) -> ClusterCreate:
    values = {"name": "lab", "partitions": ["gpu"], "shared_dir": "/scratch/gpudeck/", **fields}
    return ClusterCreate.model_validate(values)


def test_a_cluster_is_stored_once_slurm_knows_its_partitions(db: Session) -> None:
    runner = Scripted(partition=PARTITIONS)
    _, check = clusters.add_cluster(db, body(partitions=["gpu", "cpu"]), "root", client_for(runner))
    db.commit()
    assert check == clusters.PartitionCheck(True)
    stored = db.scalars(select(Cluster)).one()
    assert (stored.name, stored.partitions, stored.shared_dir) == (
        "lab",
        ["gpu", "cpu"],
        "/scratch/gpudeck",
    )
    assert (stored.access, stored.created_by, stored.created_at is not None) == (
        "local",
        "root",
        True,
    )
    assert runner.calls == [("scontrol", "-a", "-o", "show", "partition")]


def test_an_unknown_partition_names_its_position_and_stores_nothing(db: Session) -> None:
    runner = Scripted(partition=PARTITIONS)
    with pytest.raises(InvalidInput) as refused:
        clusters.add_cluster(db, body(partitions=["gpu", "h100"]), "root", client_for(runner))
    assert refused.value.extra["errors"] == [
        ("partitions.1", "no partition 'h100' on the cluster; it has cpu, gpu")
    ]
    assert clusters.list_clusters(db) == []


def test_a_silent_cluster_is_stored_unchecked_and_reads_unreachable(db: Session) -> None:
    runner = Scripted()  # nothing answers
    cluster, check = clusters.add_cluster(db, body(), "root", client_for(runner))
    assert not check.checked and check.note is not None and "did not answer" in check.note
    state = clusters.read_state(cluster, client_for(runner))
    assert (state.reachable, state.nodes) == (False, [])
    assert state.cause == f"scontrol did not answer within {clusters.READ_TIMEOUT_S:g} s"


def test_the_state_lists_each_node_with_its_gpus_in_use(db: Session) -> None:
    cluster, _ = clusters.add_cluster(
        db, body(), "root", client_for(Scripted(partition=PARTITIONS))
    )
    state = clusters.read_state(cluster, client_for(Scripted(node=NODE)))
    [node] = state.nodes
    assert (state.reachable, state.cause, node.name, node.state) == (True, None, "g1", "mixed")
    assert (node.cpus, node.cpus_allocated, node.memory_allocated_mb) == (64, 8, 64000)
    [gpus] = node.gpus
    assert (gpus.type, gpus.count, gpus.used, gpus.used_indices) == ("a100", 4, 2, [1, 2])


def ssh_cluster() -> Cluster:
    return Cluster(
        name="lab", access="ssh", ssh_host="gpudeck@login.lab", ssh_port=2222,
        ssh_key_path="/srv/gpudeck/id_ed25519", known_hosts_path="/srv/gpudeck/known_hosts",
    )  # fmt: skip


def test_clients_keep_ssh_connections_under_the_data_dir_they_were_built_with(
    tmp_path: Path,
) -> None:
    clients = clusters.SlurmClients.under(tmp_path)
    control = tmp_path / "ssh"
    assert clients.ssh_control_dir == control
    assert stat.S_IMODE(control.stat().st_mode) == 0o700  # this user's only
    runner = clients.command_runner(ssh_cluster())
    assert isinstance(runner, SshRunner)
    assert (runner.control_dir, runner.port) == (control, 2222)
    control.rmdir()
    clients(ssh_cluster(), 1.0)  # an adapter per call: the directory was made once, before
    assert not control.exists()


def test_clients_that_cannot_make_the_directory_open_a_connection_per_command(
    tmp_path: Path,
) -> None:
    not_a_dir = tmp_path / "data"
    not_a_dir.write_text("")
    clients = clusters.SlurmClients.under(not_a_dir)
    assert clients.ssh_control_dir is None
    runner = clients.command_runner(ssh_cluster())
    assert isinstance(runner, SshRunner) and "ControlMaster=auto" not in runner.argv(["true"])
