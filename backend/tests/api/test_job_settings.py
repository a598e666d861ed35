"""GET /api/jobs/{id}/settings and GET /api/jobs/diff: what the job page, `gpudeck show` and
`gpudeck diff` print."""

from __future__ import annotations

from fastapi.testclient import TestClient

SAE = {"d_in": 16, "d_sae": 64, "batch_size": 64, "steps": 1500}


def _submit(client: TestClient, **config: object) -> int:
    answer = client.post("/api/jobs", json={"kind": "sae", "config": SAE | config, "count": 1})
    assert answer.status_code == 201, answer.text
    return int(answer.json()["id"])


def test_a_jobs_settings_list_every_field_with_defaults_marked(
    client: TestClient, devices: str
) -> None:
    job_id = _submit(client, lr=0.01)
    answer = client.get(f"/api/jobs/{job_id}/settings")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    rows = {s["path"]: s for s in body["settings"]}
    # In the kind's order (the database keeps a config's keys shortest first).
    assert list(rows)[:4] == ["architecture", "k", "d_in", "d_sae"]
    assert list(rows)[-3:] == [
        "ddp.bucket_cap_mb",
        "ddp.gradient_as_bucket_view",
        "ddp.broadcast_buffers",
    ]
    stored = client.get(f"/api/jobs/{job_id}").json()["config"]
    assert rows["lr"]["value"] == stored["lr"] == 0.01 and not rows["lr"]["is_default"]
    assert rows["lr_warm_up_steps"] | {} == {
        "path": "lr_warm_up_steps", "value": 0.05, "default": 0.05, "has_default": True,
        "is_default": True, "note": "75 steps",
    }  # fmt: skip
    assert rows["ddp.bucket_cap_mb"]["is_default"]
    assert body["sweep_id"] is None and body["sweep_differences"] == []


def test_a_sweep_members_settings_say_what_differs_from_its_base(
    client: TestClient, devices: str
) -> None:
    body = {
        "job": {"kind": "sae", "config": SAE | {"lr": 0.004}, "count": 1},
        "parameters": {"grid": {"lr": [0.001, 0.01], "k": [3]}},
    }
    created = client.post("/api/sweeps", json=body)
    assert created.status_code == 201, created.text
    member = created.json()["members"][1]
    answer = client.get(f"/api/jobs/{member['job_id']}/settings").json()
    assert answer["sweep_id"] == created.json()["id"]
    # In the config's order: k against the kind's default (the base leaves it unset), lr
    # against the base's 0.004.
    assert answer["sweep_differences"] == [
        {"path": "k", "value": 3, "base": 5},
        {"path": "lr", "value": 0.01, "base": 0.004},
    ]


def test_a_diff_names_exactly_the_differing_fields_in_the_order_asked(
    client: TestClient, devices: str
) -> None:
    a, b, c = _submit(client, lr=0.01), _submit(client, lr=0.02), _submit(client, lr=0.01, k=8)
    answer = client.get("/api/jobs/diff", params={"jobs": [c, a, b]})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["job_ids"] == [c, a, b] and body["kinds"] == ["sae"] * 3
    assert [(f["path"], f["values"]) for f in body["fields"]] == [
        ("k", [8, 5, 5]),
        ("lr", [0.01, 0.01, 0.02]),
    ]
    assert body["same_count"] > 20
    two = client.get("/api/jobs/diff", params={"jobs": [a, c]}).json()
    assert [f["path"] for f in two["fields"]] == ["k"]


def test_bad_diff_requests_name_the_field(client: TestClient, devices: str) -> None:
    a = _submit(client)
    one = client.get("/api/jobs/diff", params={"jobs": [a]})
    assert one.status_code == 422 and one.json()["detail"][0]["loc"] == ["query", "jobs"]
    assert "at least 2 items" in one.text
    many = client.get("/api/jobs/diff", params={"jobs": list(range(1, 22))})
    assert many.status_code == 422 and "at most 20 items" in many.text
    twice = client.get("/api/jobs/diff", params={"jobs": [a, a]})
    assert twice.status_code == 422 and f"job {a} is named twice" in twice.text
    words = client.get("/api/jobs/diff", params={"jobs": ["x", str(a)]})
    assert words.status_code == 422 and "jobs" in words.text
    missing = client.get("/api/jobs/diff", params={"jobs": [a, 10**9]})
    assert missing.status_code == 404 and f"job {10**9} does not exist" in missing.text
    assert client.get(f"/api/jobs/{10**9}/settings").status_code == 404
