"""The test bridges' subnets: two test processes side by side never share one, and a bridge a
killed run left behind is stepped over."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from e2e import netns

WHY_NOT = netns.available()
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=WHY_NOT or "")
NETWORK = "10.233"  # used by no test bridge


def test_a_claimed_subnet_is_not_given_twice_until_released() -> None:
    first, held = netns.claim_subnet(NETWORK)
    # Another process, as an xdist worker beside this one would be, starting from the same N.
    claim = (
        "import sys; sys.path.insert(0, 'tests'); from e2e import netns; "
        f"print(netns.claim_subnet({NETWORK!r})[0])"
    )
    other = subprocess.run(
        [sys.executable, "-c", claim],
        capture_output=True, text=True, check=True, timeout=30,
    )  # fmt: skip
    assert other.stdout.strip() != first
    held.close()
    again, lock = netns.claim_subnet(NETWORK)
    assert again == first
    lock.close()


def test_a_subnet_left_on_an_interface_is_stepped_over() -> None:
    prefix, lock = netns.claim_subnet(NETWORK)
    lock.close()
    link = f"gdleft{os.getpid() % 10000}"
    subprocess.run(["ip", "link", "add", link, "type", "bridge"], check=True)
    try:
        subprocess.run(["ip", "addr", "add", f"{prefix}.1/24", "dev", link], check=True)
        claimed, lock = netns.claim_subnet(NETWORK)
        lock.close()
        assert claimed != prefix
    finally:
        subprocess.run(["ip", "link", "del", link], check=True)
