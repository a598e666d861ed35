"""/api/clusters against the real test cluster: an admin connects it (its partitions checked
by Slurm), anyone lists it and reads its nodes with the GPUs a running job holds, bad input is a
4xx naming the field, and a cluster that does not answer reads unreachable within 2 s.

These live beside the adapter's tests because they share its one cluster per test process."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from harness import auth_headers, create_token
from slurm.cluster import GPU_TYPE, GPUS_PER_NODE, NODES, PARTITION, SHORT_PARTITION, SlurmCluster
from slurm.helpers import ended, gate, wait_for
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.models import AuditEvent, Cluster
from gpudeck.services.placement.recommend import usable_when_idle
from gpudeck.services.submit import cluster_target
from gpudeck.slurm import BatchSpec, SlurmClient, render

API_BOUND_S = 2.0
GIB = 1024**3


def body_for(cluster: SlurmCluster, name: str = "lab", **fields: Any) -> dict[str, Any]:
    return {
        "name": name, "kind": "slurm", "partitions": [PARTITION], "account": None, "qos": None,
        "shared_dir": str(cluster.root / "shared"), "slurm_conf": str(cluster.conf), **fields,
    }  # fmt: skip


@pytest.fixture
def lab(client: TestClient, slurm_cluster: SlurmCluster) -> Iterator[dict[str, Any]]:
    added = client.post("/api/clusters", json=body_for(slurm_cluster))
    assert added.status_code == 201, added.text
    yield added.json()


@pytest.fixture
def user_headers(session_factory: sessionmaker[Session]) -> dict[str, str]:
    return auth_headers(create_token(session_factory, "user", name="alice"))


def count_clusters(db: Session) -> int:
    return db.scalar(select(func.count()).select_from(Cluster)) or 0


def test_an_admin_connects_the_cluster_and_anyone_sees_its_gpus_in_use(
    client: TestClient,
    lab: dict[str, Any],
    user_headers: dict[str, str],
    slurm: SlurmClient,
    spec_for: Callable[..., BatchSpec],
    tmp_path: Path,
    db: Session,
) -> None:
    assert (lab["partitions"], lab["partitions_checked"], lab["check_note"]) == (
        [PARTITION], True, None,
    )  # fmt: skip
    assert lab["created_by"] == "admin" and lab["access"] == "local"
    listed = client.get("/api/clusters", headers=user_headers)
    assert listed.status_code == 200
    assert [c["name"] for c in listed.json()] == ["lab"]

    release = tmp_path / "release"
    spec = spec_for(["sh", "-c", gate(release)], gpus_per_node=2, gpu_type=GPU_TYPE)
    job = slurm.submit(render(spec))
    try:
        holder = wait_for(slurm, [job], lambda s: s[job].state == "running")[job].nodes
        state = client.get("/api/clusters/lab/state", headers=user_headers).json()
    finally:
        release.touch()
        wait_for(slurm, [job], ended)
    assert state["reachable"] and state["cause"] is None
    assert state["read_in_s"] < API_BOUND_S
    assert state["answered_at"] == state["read_at"] and state["unreachable_since"] is None
    by_node = {n["name"]: n for n in state["nodes"]}
    assert sorted(by_node) == sorted(NODES)
    for name, node in by_node.items():
        assert node["partitions"] == [PARTITION, SHORT_PARTITION]
        [gpus] = node["gpus"]
        held = GPUS_PER_NODE if name == holder else 0
        assert (gpus["type"], gpus["count"], gpus["used"]) == (GPU_TYPE, GPUS_PER_NODE, held)
        assert gpus["used_indices"] == list(range(held))
    actions = db.scalars(select(AuditEvent.action).where(AuditEvent.target == "cluster:lab"))
    assert list(actions) == ["cluster.add"]


def test_an_unknown_partition_is_refused_naming_it_and_nothing_is_kept(
    client: TestClient, slurm_cluster: SlurmCluster, db: Session
) -> None:
    body = body_for(slurm_cluster, partitions=[PARTITION, "nosuch"])
    refused = client.post("/api/clusters", json=body)
    assert refused.status_code == 422
    [error] = refused.json()["detail"]
    assert error["loc"][-2:] == ["partitions", 1]
    assert "'nosuch'" in error["msg"] and PARTITION in error["msg"]  # what the cluster has
    assert count_clusters(db) == 0


@pytest.mark.parametrize(
    ("fields", "loc"),
    [
        ({"name": "Lab One"}, "name"),
        ({"partitions": []}, "partitions"),
        ({"partitions": ["gpu,cpu"]}, "partitions"),
        ({"account": "--wrap=rm"}, "account"),
        ({"shared_dir": "relative/dir"}, "shared_dir"),
        ({"shared_dir": "/scratch/../etc"}, "shared_dir"),
        ({"kind": "kubernetes"}, "kind"),
        ({"access": "ssh"}, "ssh_host"),  # ssh needs its login node
        ({"partition": "gpu"}, "partition"),  # unknown field
        ({"slurm_conf": "/nonexistent/slurm.conf"}, "slurm_conf"),
    ],
)
def test_bad_input_is_a_422_naming_the_field(
    client: TestClient, slurm_cluster: SlurmCluster, db: Session, fields: dict[str, Any], loc: str
) -> None:
    refused = client.post("/api/clusters", json=body_for(slurm_cluster, **fields))
    assert refused.status_code == 422, refused.text
    assert any(loc in e["loc"] for e in refused.json()["detail"]), refused.json()
    assert count_clusters(db) == 0


def test_only_an_admin_adds_or_removes_and_a_name_is_taken_once(
    client: TestClient,
    lab: dict[str, Any],
    user_headers: dict[str, str],
    slurm_cluster: SlurmCluster,
    db: Session,
) -> None:
    other = body_for(slurm_cluster, name="other")
    assert client.post("/api/clusters", json=other, headers=user_headers).status_code == 403
    assert client.delete("/api/clusters/lab", headers=user_headers).status_code == 403
    assert client.get("/api/clusters/lab", headers=user_headers).status_code == 200

    taken = client.post("/api/clusters", json=body_for(slurm_cluster))
    assert taken.status_code == 409 and taken.json()["detail"]["field"] == "name"

    removed = client.delete("/api/clusters/lab")
    assert removed.status_code == 200 and removed.json()["name"] == "lab"
    assert client.get("/api/clusters").json() == []
    for gone in (client.delete("/api/clusters/lab"), client.get("/api/clusters/lab/state")):
        assert gone.status_code == 404 and gone.json()["detail"]["code"] == "cluster_not_found"
    trail = db.execute(
        select(AuditEvent.actor, AuditEvent.action)
        .where(AuditEvent.target == "cluster:lab")
        .order_by(AuditEvent.id)
    ).all()
    assert [tuple(row) for row in trail] == [("admin", "cluster.add"), ("admin", "cluster.remove")]


def test_a_cluster_that_does_not_answer_reads_unreachable_within_the_bound(
    client: TestClient, lab: dict[str, Any], slurm_cluster: SlurmCluster
) -> None:
    answered = client.get("/api/clusters/lab/state").json()
    slurm_cluster.pause_controller()  # slurmctld SIGSTOPped: commands wait, they are not refused
    try:
        started = time.monotonic()
        answer = client.get("/api/clusters/lab/state")
        took_s = time.monotonic() - started
        again = client.get("/api/clusters/lab/state").json()
        late = client.post("/api/clusters", json=body_for(slurm_cluster, name="late"))
    finally:
        slurm_cluster.resume_controller()
    assert answer.status_code == 200 and took_s < API_BOUND_S, (answer.status_code, took_s)
    state = answer.json()
    assert (state["reachable"], state["nodes"]) == (False, [])
    assert "scontrol did not answer" in state["cause"]
    # The board says since when: the first read it missed, kept by the next one, and the last
    # answer before it.
    assert state["unreachable_since"] == state["read_at"] == again["unreachable_since"]
    assert again["read_at"] > state["read_at"]
    assert state["answered_at"] == again["answered_at"] == answered["read_at"]
    # Added anyway, saying why its partitions are unchecked.
    assert late.status_code == 201, late.text
    assert late.json()["partitions_checked"] is False
    assert "did not answer" in late.json()["check_note"]

    back = client.get("/api/clusters/lab/state").json()
    assert back["reachable"] and len(back["nodes"]) == len(NODES)
    assert back["unreachable_since"] is None and back["answered_at"] == back["read_at"]


def test_a_partitions_gpu_types_against_an_estimate_and_the_type_a_submit_asks_for(
    client: TestClient, slurm_cluster: SlurmCluster, user_headers: dict[str, str]
) -> None:
    """The partition's GRES types as Slurm reports them, with the memory the cluster configures
    (a100 is configured but not in the partition: left out), judged against an estimate; bad
    input names its field; a silent Slurm leaves the configured types, counts unknown."""
    memory = {GPU_TYPE: 80 * GIB, "a100": 40 * GIB}
    added = client.post("/api/clusters", json=body_for(slurm_cluster, gpu_memory=memory))
    assert added.status_code == 201, added.text
    cluster_target.FACTS.forget()  # facts another test read of a cluster named lab

    def types(**params: Any) -> Any:
        return client.get("/api/clusters/lab/gpu-types", params=params, headers=user_headers)

    fitting = types(partition=PARTITION, estimate_bytes=30 * GIB).json()
    [h100] = fitting["types"]
    assert h100 == {
        "type": GPU_TYPE, "memory_bytes": 80 * GIB, "usable_bytes": usable_when_idle(80 * GIB),
        "count": GPUS_PER_NODE * len(NODES), "fits": True,
    }  # fmt: skip
    assert (fitting["reachable"], fitting["gpu_type"], fitting["refusal"]) == (True, None, None)
    too_big = types(estimate_bytes=90 * GIB).json()  # the cluster's first partition
    assert too_big["partition"] == PARTITION and too_big["types"][0]["fits"] is False
    assert too_big["gpu_type"] is None
    assert too_big["refusal"].startswith("needs 90.00 GiB per device: no GPU type of partition")
    assert types().json()["types"][0]["fits"] is None  # no estimate: nothing judged

    for params, code, field in [
        ({"partition": "nosuch"}, 422, "partition"),
        ({"estimate_bytes": "lots"}, 422, "estimate_bytes"),
        ({"estimate_bytes": -1}, 422, "estimate_bytes"),
    ]:
        refused = types(**params)
        assert refused.status_code == code and field in refused.text, refused.text
    gone = client.get("/api/clusters/nosuch/gpu-types", headers=user_headers)
    assert gone.status_code == 404 and gone.json()["detail"]["field"] == "name"

    cluster_target.FACTS.forget()
    slurm_cluster.pause_controller()
    try:
        started = time.monotonic()
        silent = types(estimate_bytes=50 * GIB)
        took_s = time.monotonic() - started
    finally:
        slurm_cluster.resume_controller()
        cluster_target.FACTS.forget()
    assert silent.status_code == 200 and took_s < API_BOUND_S, (silent.status_code, took_s)
    shown = silent.json()
    assert shown["reachable"] is False and "did not answer" in shown["cause"]
    assert [(t["type"], t["count"], t["fits"]) for t in shown["types"]] == [
        ("a100", None, False), (GPU_TYPE, None, True),
    ]  # fmt: skip
    assert (shown["gpu_type"], shown["refusal"]) == (None, None)  # as a submit then: any type
