"""A free TCP port on 127.0.0.1 for a server a test starts (the kernel picks it)."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on now (bound once to port 0, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
