"""What the workbench's servers share: which addresses are this machine's loopback (bound
unless told otherwise; beyond it a credential is required) and the environment variables their
credentials come from."""

from __future__ import annotations

import ipaddress

DASHBOARD_TOKEN_ENV = "WORKBENCH_TOKEN"
"""The environment variable `workbench dashboard` takes its token from (else a random one)."""

SERVE_API_KEY_ENV = "WORKBENCH_SERVE_API_KEY"
"""The environment variable `workbench serve-model` takes its API key from."""

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
