"""Which addresses are this machine's loopback: what every server of the workbench binds
unless told otherwise, and beyond which it asks for a credential."""

from __future__ import annotations

import ipaddress

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
"""Host names that always reach this machine's loopback interface."""


def is_loopback(address: str) -> bool:
    """Whether `address` (a name or an IP, IPv6 with or without brackets) is loopback."""
    if address.lower() in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(address.strip("[]")).is_loopback
    except ValueError:
        return False
