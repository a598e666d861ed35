"""The domain errors (services/errors.py): each is in the category api/errors.py maps to a
status code, carries the code and field a client reads, and a message that names what went
wrong (the busy devices and who holds them, how many devices are free and why, every invalid
field)."""

from __future__ import annotations

import pytest

from gpudeck.services.errors import (
    BusyDevice,
    Conflict,
    DomainError,
    Forbidden,
    GpuBusy,
    Invalid,
    InvalidInput,
    InvalidTransition,
    JobNotFound,
    NotAuthenticated,
    NotEnoughDevices,
    NotFound,
    UnknownDevice,
    UnknownKind,
)


@pytest.mark.parametrize(
    ("error", "category", "code", "field"),
    [
        (GpuBusy([]), Conflict, "gpu_busy", "devices"),
        (NotEnoughDevices(4, 1, "n"), Conflict, "not_enough_devices", "count"),
        (InvalidTransition(3, "running", "resumed"), Conflict, "invalid_transition", "status"),
        (UnknownDevice("devices.2", "n", "index 9"), Invalid, "unknown_device", "devices.2"),
        (InvalidInput([("config.lr", "too big")]), Invalid, "invalid_input", "config.lr"),
        (JobNotFound(3), NotFound, "job_not_found", "job_id"),
        (UnknownKind("x", ["sae"]), NotFound, "unknown_kind", "kind_name"),
        (Forbidden("no", field="kind"), Forbidden, "forbidden", "kind"),
        (NotAuthenticated(), Forbidden, "not_authenticated", None),
    ],
)
def test_each_error_has_its_category_code_and_field(
    error: DomainError, category: type[DomainError], code: str, field: str | None
) -> None:
    # The category decides the HTTP status (api/errors.py); code and field are the body's.
    assert isinstance(error, category)
    assert (error.code, error.field) == (code, field)
    assert str(error) == error.message and error.message


def test_gpu_busy_names_each_device_and_its_holder_or_an_external_process() -> None:
    busy = [
        BusyDevice("alpha", "GPU-a", 0, 12, "held_by_job"),
        BusyDevice("beta", "GPU-b", 3, None, "external_process"),
    ]
    error = GpuBusy(busy)
    assert error.message == "devices busy: alpha/0 (job 12), beta/3 (external process)"
    assert error.extra["busy"][0] == {
        "node": "alpha",
        "uuid": "GPU-a",
        "index": 0,
        "held_by_job_id": 12,
        "reason": "held_by_job",
    }
    assert error.extra["busy"][1]["held_by_job_id"] is None


def test_not_enough_devices_says_where_and_counts_idle_devices_without_room() -> None:
    plain = NotEnoughDevices(4, 1, None)
    assert plain.message == "4 devices requested but only 1 are free"
    assert plain.extra == {"requested": 4, "free": 1, "lacking_memory": 0}
    # Idle devices without room must not read as taken: the message says why they do not count.
    short = NotEnoughDevices(4, 1, "alpha", lacking_memory=2)
    assert short.message.startswith("4 devices requested but only 1 are free on node alpha")
    assert "2 more are idle but lack the free memory" in short.message
    assert short.extra["lacking_memory"] == 2


def test_invalid_input_keeps_every_field_and_names_the_first() -> None:
    errors = [("config.lr", "must be positive"), ("count", "too many")]
    error = InvalidInput(errors)
    assert error.field == "config.lr"
    assert error.extra["errors"] == errors  # the 422 body lists them all, in order
    assert error.message == "config.lr: must be positive; count: too many"
    assert InvalidInput([]).field is None


def test_an_unknown_kind_lists_the_known_ones_and_a_transition_says_both_states() -> None:
    assert UnknownKind("saee", ["sae", "script"]).message == (
        "no job kind 'saee'; known kinds: sae, script"
    )
    moved = InvalidTransition(7, "running", "resumed (it has not finished)")
    assert moved.message == "job 7 is running; it cannot become resumed (it has not finished)"
    assert moved.extra == {"current": "running", "target": "resumed (it has not finished)"}
    assert UnknownDevice("devices.0", "alpha", "uuid GPU-x").message == (
        "no device uuid GPU-x on node 'alpha'"
    )
