"""What a process on this host uses now (psutil): CPU share and resident memory, for the
monitor's shard rows. The bare facts (alive, started when, running what) are `_processes`."""

from __future__ import annotations

import threading
import time
from typing import Any

__all__ = ["process_usage"]

_PROCESSES: dict[int, Any] = {}
_PROCESSES_LOCK = threading.Lock()


def process_usage(pid: int) -> tuple[float, int] | None:
    """(CPU %, resident bytes) of process `pid` on this host; None when it is gone.

    CPU is the share of one core since the last call for that pid (the first call: since the
    process started), as `top` shows it.
    """
    import psutil

    with _PROCESSES_LOCK:
        process = _PROCESSES.get(pid)
        try:
            if process is None or not process.is_running():
                process = _PROCESSES[pid] = psutil.Process(pid)
                times = process.cpu_times()
                process.cpu_percent(None)  # starts the interval of the next call
                age = max(time.time() - process.create_time(), 1e-6)
                cpu = 100.0 * (times.user + times.system) / age
            else:
                cpu = process.cpu_percent(None)
            return round(cpu, 1), int(process.memory_info().rss)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            _PROCESSES.pop(pid, None)
            return None
