"""Which network interface holds an address: collectives across nodes (gloo, NCCL) must bind
to the interface the other nodes reach, and without being told they take the one the host name
resolves to, often loopback (`Gloo connectFullMesh failed ... remote=[127.0.0.1]`)."""

from __future__ import annotations

import ipaddress
import os

import psutil

SOCKET_IFNAME_VARS = ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")


def interface_of(address: str) -> str | None:
    """The name of the interface that holds `address` (an IP), or None."""
    try:
        wanted = ipaddress.ip_address(address)
    except ValueError:
        return None  # a host name: nothing to match
    for name, addrs in psutil.net_if_addrs().items():
        for addr in addrs:
            try:
                if ipaddress.ip_address(addr.address.split("%")[0]) == wanted:
                    return name
            except ValueError:
                continue  # a MAC address
    return None


def socket_ifname(node_address: str) -> str | None:
    """The interface this node's ranks bind collectives to: the operator's GLOO_SOCKET_IFNAME
    when set, else the interface of the node's advertised address (GPUDECK_NODE_ADDRESS)."""
    return os.environ.get("GLOO_SOCKET_IFNAME") or interface_of(node_address)
