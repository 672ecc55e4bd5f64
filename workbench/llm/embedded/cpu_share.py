"""How many threads an embedded model may use now, on a CPU it shares with other processes.

llama.cpp's threads meet at a barrier after every operation of the graph, hundreds of times a
token. On a core that another busy process also wants, the thread that was descheduled holds up
the others: measured here (2 cores, one busy neighbour), 2-thread decoding fell from 68 to 20
tokens/s while 1 thread kept 45-49. So the thread count follows the cores the process may use
(its affinity) minus what other processes are using right now: `CpuShare.threads()` reads
/proc/stat and this process's own CPU time at most every `interval_s` and answers the cores left.
The count changes llama.cpp's speed only: decodes of several tokens give each row to one thread
whole, and a decode of one token always runs on `engine.ONE_ROW_THREADS` (its attention would
otherwise follow the thread count; tests/llm/embedded/test_engine.py).
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path

PROC_STAT = Path("/proc/stat")
BUSY_MARGIN = 0.25
"""Others' load (in cores) above which a core counts as taken: 0.3 of a core busy elsewhere is
already enough for the barrier to wait on a descheduled thread."""


def usable_cores() -> list[int]:
    """The CPUs this process may run on (its affinity)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - non-Linux
        return list(range(os.cpu_count() or 1))


def _busy_seconds(cpus: list[int]) -> float | None:
    """CPU seconds spent busy (not idle, not waiting on I/O) by these CPUs since boot."""
    try:
        lines = PROC_STAT.read_text().splitlines()
    except OSError:
        return None
    wanted = {f"cpu{c}" for c in cpus}
    ticks = 0
    for line in lines:
        name, _, rest = line.partition(" ")
        if name in wanted:
            fields = [int(x) for x in rest.split()]
            ticks += sum(fields[:8]) - fields[3] - fields[4]  # all but idle and iowait
    return ticks / os.sysconf("SC_CLK_TCK")


def _own_seconds() -> float:
    """CPU seconds this process (all its threads) has used."""
    times = os.times()
    return times.user + times.system


class CpuShare:
    """The thread count for the next piece of work: `most` (the usable cores, or fewer when
    asked) less the cores other processes kept busy over the last interval, at least 1.

    `fixed=True` always answers `most` (a configured `n_threads`).
    """

    def __init__(self, most: int, *, fixed: bool = False, interval_s: float = 0.25) -> None:
        self.cpus = usable_cores()
        self.most = max(1, most)
        self.fixed = fixed
        self.interval_s = interval_s
        self.current = self.most
        self.others = 0.0
        self._last = self._sample()

    def _sample(self) -> tuple[float, float | None, float]:
        return time.monotonic(), _busy_seconds(self.cpus), _own_seconds()

    def threads(self) -> int:
        """Threads to use now (re-measured when `interval_s` has passed since the last look)."""
        if self.fixed or self.most == 1:
            return self.most
        now = self._sample()
        wall = now[0] - self._last[0]
        if wall < self.interval_s:
            return self.current
        if now[1] is not None and self._last[1] is not None:
            others = (now[1] - self._last[1]) - (now[2] - self._last[2])
            self.others = max(0.0, others / wall)
            taken = max(0, math.ceil(self.others - BUSY_MARGIN))
            self.current = max(1, min(self.most, len(self.cpus) - taken))
        self._last = now
        return self.current

    def describe(self) -> dict[str, object]:
        """The policy, for the manifest: fixed or adaptive, the most threads, the wait policy."""
        return {
            "policy": "fixed" if self.fixed else "adaptive",
            "max": self.most,
            "usable_cores": len(self.cpus),
            "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "default"),
        }
