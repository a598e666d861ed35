"""`gpudeck jobs`'s devices column."""

from __future__ import annotations

from gpudeck.cli.client import held_devices


def device(node: str, index: int) -> dict[str, object]:
    return {"node": node, "index": index}


def test_devices_read_per_node_and_a_job_that_never_held_any_shows_a_dash() -> None:
    assert held_devices({"node": "vm", "devices": [device("vm", 0), device("vm", 1)]}) == "vm:0,1"
    across = [device("a", 0), device("a", 1), device("b", 0)]
    assert held_devices({"node": "a", "devices": across}) == "a:0,1 b:0"
    assert held_devices({"node": "vm", "devices": []}) == "-"  # was "vm:"
