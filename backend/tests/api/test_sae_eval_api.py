"""An SAE checkpoint's evaluation through the API: the follow-up prefills it, the submit
refuses an unknown checkpoint naming the field, and the SAE job lists its evaluations."""

from __future__ import annotations

from typing import Any

import numpy as np
from activations_fixtures import tiny_gpt2
from fastapi.testclient import TestClient
from harness import auth_headers, create_token, register_devices, statements_run
from sae_eval_fixtures import identity_sae, write_rows, write_sae_checkpoint
from sqlalchemy.orm import Session, sessionmaker

from gpudeck.core.config import Settings


def _submit(client: TestClient, kind: str, config: dict[str, Any]) -> Any:
    return client.post("/api/jobs", json={"kind": kind, "config": config, "count": 1, "hold": True})


def _field(body: dict[str, Any]) -> str:
    return ".".join(str(p) for p in body["detail"][0]["loc"][1:])


def test_an_evaluation_from_the_follow_up_to_the_list(
    client: TestClient, db: Session, settings: Settings
) -> None:
    register_devices(db)
    sae = _submit(client, "sae", {"d_in": 2, "d_sae": 3, "k": 1}).json()["id"]
    follow = client.get(f"/api/jobs/{sae}/follow-up").json()
    assert follow["label"] == "Evaluate a checkpoint" and follow["depends_on"] == []

    refused = _submit(client, "sae_eval", follow["config"])  # no checkpoint yet
    assert refused.status_code == 422
    assert _field(refused.json()) == "config.source_job"
    write_sae_checkpoint(settings.data_dir, 5, job=sae)
    unknown = _submit(client, "sae_eval", {**follow["config"], "step": 6})
    assert unknown.status_code == 422
    [error] = unknown.json()["detail"]
    assert _field(unknown.json()) == "config.step" and "it has 5" in error["msg"]
    nan = client.post(
        "/api/jobs",
        content=f'{{"kind": "sae_eval", "count": 1, "config": {{"source_job": {sae}, '
        '"batch_size": NaN}}',
        headers={"content-type": "application/json"},
    )
    assert nan.status_code == 422 and "batch_size" in nan.text

    on_file = {
        **follow["config"],
        "dataset": {"type": "file", "path": write_rows(settings.data_dir)},
    }
    first = _submit(client, "sae_eval", on_file)
    assert first.status_code == 201, first.text
    second = _submit(client, "sae_eval", {**on_file, "step": 5}).json()
    _submit(client, "sae", {"d_in": 2, "d_sae": 3, "k": 1})  # not an evaluation
    listed = client.get(f"/api/jobs/{sae}/follow-ups").json()
    assert [j["id"] for j in listed] == [second["id"], first.json()["id"]]

    kind = client.get("/api/kinds/sae_eval").json()
    [histogram] = kind["charts"]
    assert histogram["style"] == "bars" and histogram["series"][0]["label"] == "never"


def test_only_the_sae_jobs_owner_or_an_admin_evaluates_it(
    client: TestClient, db: Session, settings: Settings, session_factory: sessionmaker[Session]
) -> None:
    """Another user's figures are not theirs to see: an evaluation of them is refused (403,
    naming the field), whatever checkpoints there are; an unknown job is a 422."""
    register_devices(db)
    ana = auth_headers(create_token(session_factory, "user", "ana"))
    bob = auth_headers(create_token(session_factory, "user", "bob"))
    body = {"kind": "sae", "config": {"d_in": 2, "d_sae": 3, "k": 1}, "count": 1, "hold": True}
    sae = client.post("/api/jobs", json=body, headers=ana).json()["id"]
    write_sae_checkpoint(settings.data_dir, 5, job=sae)
    evaluation = {"kind": "sae_eval", "config": {"source_job": sae}, "count": 1, "hold": True}
    refused = client.post("/api/jobs", json=evaluation, headers=bob)
    assert refused.status_code == 403, refused.text
    assert refused.json()["detail"]["field"] == "config.source_job"
    assert "only ana or an admin" in refused.json()["detail"]["message"]
    assert client.post("/api/jobs", json=evaluation, headers=ana).status_code == 201
    assert client.post("/api/jobs", json=evaluation).status_code == 201  # the admin
    missing = {**evaluation, "config": {"source_job": 10**9}}
    gone = client.post("/api/jobs", json=missing, headers=ana)
    assert gone.status_code == 422 and _field(gone.json()) == "config.source_job"


def test_loss_recovered_is_refused_naming_the_field_and_shown_when_accepted(
    client: TestClient, db: Session, settings: Settings
) -> None:
    """A hook whose width is not the SAE's d_in, or a NaN, is a 422 naming the field under
    config.loss_recovered; a good one is accepted, and the kind shows its figures."""
    register_devices(db)
    sae = _submit(client, "sae", {"d_in": 32, "d_sae": 64, "k": 1}).json()["id"]
    write_sae_checkpoint(settings.data_dir, 5, job=sae, weights=identity_sae(32))
    tiny_gpt2(settings.data_dir / "models")
    rows = write_rows(settings.data_dir, "rows.npy", np.zeros((4, 32), dtype=np.float32))
    np.save(settings.data_dir / "datasets" / "ids.npy", np.zeros((4, 8), dtype=np.int64))
    lm = {"type": "lm", "model": "gpt2-tiny", "input": "ids.npy", "hook": "transformer.h.0"}
    config = {"source_job": sae, "dataset": {"type": "file", "path": rows}}

    wide = {**lm, "hook": "transformer.h.0.mlp.c_fc"}
    refused = _submit(client, "sae_eval", {**config, "loss_recovered": wide})
    assert refused.status_code == 422, refused.text
    assert _field(refused.json()) == "config.loss_recovered.hook"
    assert "is 128 wide; the SAE's d_in is 32" in refused.json()["detail"][0]["msg"]
    nan = client.post(
        "/api/jobs",
        content=f'{{"kind": "sae_eval", "count": 1, "config": {{"source_job": {sae}, '
        '"loss_recovered": {"type": "lm", "model": "gpt2-tiny", "input": "ids.npy", '
        '"hook": "transformer.h.0", "max_sequences": NaN}}}',
        headers={"content-type": "application/json"},
    )
    assert nan.status_code == 422 and "max_sequences" in nan.text, nan.text

    accepted = _submit(client, "sae_eval", {**config, "loss_recovered": lm})
    assert accepted.status_code == 201, accepted.text
    kind = client.get("/api/kinds/sae_eval").json()
    figures = {s["metric"]: s for s in kind["summary_metrics"]}
    assert figures["loss_recovered"]["label"] == "loss recovered"
    # off in a job's config, the page says "not measured: turn on loss recovered"
    assert figures["loss_recovered"]["needs"] == figures["lm_loss_sae"]["needs"] == "loss_recovered"
    assert figures["l0"]["needs"] == ""
    body = {"kind": "sae_eval", "config": {**config, "loss_recovered": lm}}
    assert client.post("/api/estimate", json=body).status_code == 200


def test_a_sweep_of_evaluations_checks_the_source_jobs_owner_once(
    client: TestClient, db: Session, settings: Settings, session_factory: sessionmaker[Session]
) -> None:
    """Members of a sweep over checkpoint steps read the same SAE job: its owner is read once,
    not once a member; another user's sweep over it is still refused whole (403)."""
    register_devices(db)
    ana = auth_headers(create_token(session_factory, "user", "ana"))
    bob = auth_headers(create_token(session_factory, "user", "bob"))
    body = {"kind": "sae", "config": {"d_in": 2, "d_sae": 3, "k": 1}, "count": 1, "hold": True}
    sae = client.post("/api/jobs", json=body, headers=ana).json()["id"]
    steps = [5, 10, 15, 20]
    for step in steps:
        write_sae_checkpoint(settings.data_dir, step, job=sae)
    sweep = {
        "job": {"kind": "sae_eval", "config": {"source_job": sae}, "count": 1},
        "parameters": {"grid": {"step": steps}},
    }
    engine = client.app.state.engine  # type: ignore[attr-defined]
    with statements_run(engine) as statements:
        created = client.post("/api/sweeps", json=sweep, headers=ana)
    assert created.status_code == 201, created.text
    assert len(created.json()["members"]) == len(steps)
    owner_reads = [s for s in statements if s.lstrip().startswith("SELECT jobs.owner")]
    assert len(owner_reads) == 1, owner_reads

    refused = client.post("/api/sweeps", json=sweep, headers=bob)
    assert refused.status_code == 403, refused.text
    assert refused.json()["detail"]["field"] == "config.source_job"
