"""Collectives across nodes bind to the interface of the node's advertised address."""

from __future__ import annotations

import pytest

from gpudeck.core.netif import interface_of, socket_ifname


def test_the_interface_holding_an_address_is_found() -> None:
    assert interface_of("127.0.0.1") == "lo"
    assert interface_of("192.0.2.77") is None  # TEST-NET-1: held by no interface here
    assert interface_of("node-a.example") is None  # a host name is not matched


def test_an_operator_choice_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GLOO_SOCKET_IFNAME", raising=False)
    assert socket_ifname("127.0.0.1") == "lo"
    monkeypatch.setenv("GLOO_SOCKET_IFNAME", "eth7")
    assert socket_ifname("127.0.0.1") == "eth7"
