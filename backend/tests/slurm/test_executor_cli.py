"""`gpudeck submit --cluster`, `gpudeck show` and `gpudeck jobs` for a job on the real test
cluster: the real command against a live API. No executor runs here, so the job waits to be
handed to Slurm, with its cluster set; the cluster's refusals come back naming the field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_harness import Cli
from fastapi.testclient import TestClient
from harness import live_server
from slurm.cluster import GPUS_PER_NODE, PARTITION, SlurmCluster

from gpudeck.core.config import Settings
from gpudeck.services.submit import cluster_target

SAE_CONFIG: dict[str, Any] = {
    "d_in": 16, "d_sae": 64, "batch_size": 64, "steps": 30, "seed": 1,
    "dataset": {"type": "synthetic", "num_features": 32, "active_features": 3,
                "num_samples": 100_000},
}  # fmt: skip


@pytest.fixture
def cli_on_lab(
    client: TestClient,
    slurm_cluster: SlurmCluster,
    settings: Settings,
    admin_token: str,
    tmp_path: Path,
) -> Any:
    """Cluster lab (the test cluster) connected, and the CLI against a live API."""
    cluster_target.FACTS.forget()  # facts another test read of a cluster named lab
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    body = {
        "name": "lab", "partitions": [PARTITION], "shared_dir": str(settings.data_dir),
        "slurm_conf": str(slurm_cluster.conf),
    }  # fmt: skip
    added = client.post("/api/clusters", json=body)
    assert added.status_code == 201, added.text
    with live_server(settings) as url:
        yield Cli(url, admin_token, tmp_path)


def test_submit_with_cluster_waits_for_slurm_and_show_and_jobs_say_where(cli_on_lab: Cli) -> None:
    cli = cli_on_lab
    config = json.dumps(SAE_CONFIG)
    sent = cli("submit", "sae", "--config", config, "--count", "2", "--cluster", "lab")
    assert sent.returncode == 0, sent.stderr
    job_id = int(sent.stdout.split()[1])
    assert f"job {job_id} queued on Slurm cluster lab, partition {PARTITION}" in sent.stdout
    assert "Slurm places its 2 GPUs" in sent.stdout

    job = json.loads(cli("show", str(job_id), "--json").stdout)
    assert (job["status"], job["cluster"], job["devices"]) == ("queued", "lab", [])
    assert job["slurm_job_id"] is None  # no executor here: not handed to Slurm
    assert job["slurm"]["partition"] == PARTITION and job["slurm"]["nodes_requested"] == 1

    shown = cli("show", str(job_id))
    assert shown.returncode == 0, shown.stderr
    words = [line.split() for line in shown.stdout.splitlines()]
    lines = {" ".join(w[:2]): " ".join(w) for w in words}
    assert lines["devices lab"] == "devices lab (Slurm) (2 ranks)"
    assert lines["cluster lab"] == "cluster lab (Slurm)"
    assert lines["slurm job"] == "slurm job not submitted yet"
    assert lines[f"partition {PARTITION}"] == f"partition {PARTITION}"
    assert lines["slurm nodes"] == "slurm nodes 1 requested"
    assert lines["attempts 0"] == "attempts 0"

    listed = cli("jobs")
    assert listed.returncode == 0, listed.stderr
    cells = [[c.strip() for c in line.split("│")[1:-1]] for line in listed.stdout.splitlines()]
    [row] = [c for c in cells if c[:1] == [str(job_id)]]
    assert (row[3], row[4]) == ("queued", "lab (Slurm)")  # status, devices


def test_the_clusters_refusals_name_the_field_and_create_nothing(cli_on_lab: Cli) -> None:
    cli = cli_on_lab
    config = json.dumps(SAE_CONFIG)
    base = ("submit", "sae", "--config", config, "--cluster", "lab")

    bad_partition = cli(*base, "--partition", "nosuch")
    assert bad_partition.returncode == 1
    assert "422 partition: 'nosuch' is not one of cluster lab's partitions" in bad_partition.stderr

    too_many = GPUS_PER_NODE + 1
    on_one_node = cli(*base, "--count", str(too_many))
    assert on_one_node.returncode == 1
    assert (
        f"422 count: {too_many} GPUs on one node: partition {PARTITION}'s nodes have at most "
        f"{GPUS_PER_NODE} each" in " ".join(on_one_node.stderr.split())
    )

    unknown = cli("submit", "sae", "--config", config, "--cluster", "nolab")
    assert unknown.returncode == 1 and "422 cluster: no cluster 'nolab'" in unknown.stderr

    alone = cli("submit", "sae", "--config", config, "--partition", PARTITION)
    assert alone.returncode == 1 and "partition goes with cluster" in alone.stderr

    assert json.loads(cli("jobs", "--json").stdout)["items"] == []


def test_a_sweep_submitted_with_cluster_puts_every_member_on_it(cli_on_lab: Cli) -> None:
    cli = cli_on_lab
    config = json.dumps(SAE_CONFIG)
    sent = cli("sweep", "submit", "sae", "--config", config, "--grid", "seed=1,2", "--cluster",
               "lab", "--partition", PARTITION, "--count", "2")  # fmt: skip
    assert sent.returncode == 0, sent.stderr
    assert "2 members" in sent.stdout
    members = json.loads(cli("jobs", "--json").stdout)["items"]
    assert sorted(m["config"]["seed"] for m in members) == [1, 2]
    for member in members:
        assert (member["status"], member["cluster"], member["world_size"]) == ("queued", "lab", 2)
        assert member["slurm"]["partition"] == PARTITION and member["slurm_job_id"] is None

    refused = cli("sweep", "submit", "sae", "--config", config, "--grid", "seed=1,2",
                  "--cluster", "lab", "--partition", "nosuch")  # fmt: skip
    assert refused.returncode == 1
    assert "partition: 'nosuch' is not one of cluster lab's partitions" in refused.stderr
