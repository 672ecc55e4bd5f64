"""The embedded model's thread count follows the cores other processes leave free."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from workbench.llm.embedded import cpu_share
from workbench.llm.embedded.cpu_share import CpuShare


def test_a_fixed_count_is_kept() -> None:
    share = CpuShare(3, fixed=True)
    assert share.threads() == 3
    assert share.describe()["policy"] == "fixed"


def test_others_busy_cores_are_left_to_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two usable cores: a neighbour keeping one busy leaves one thread; gone, two again."""
    clock = {"now": 0.0, "busy": 0.0, "own": 0.0}
    monkeypatch.setattr(cpu_share, "usable_cores", lambda: [0, 1])
    monkeypatch.setattr(cpu_share.time, "monotonic", lambda: clock["now"])
    monkeypatch.setattr(cpu_share, "_busy_seconds", lambda cpus: clock["busy"])
    monkeypatch.setattr(cpu_share, "_own_seconds", lambda: clock["own"])
    share = CpuShare(2, interval_s=0.25)

    def second(own: float, others: float) -> int:
        clock["now"] += 1.0
        clock["own"] += own
        clock["busy"] += own + others
        return share.threads()

    assert second(own=2.0, others=0.05) == 2  # quiet: both cores
    assert second(own=1.0, others=1.0) == 1  # one busy neighbour
    assert share.others == pytest.approx(1.0)
    assert second(own=1.0, others=0.5) == 1  # half a core taken is enough to wait on
    assert second(own=2.0, others=0.0) == 2
    clock["now"] += 0.1  # within the interval: no new look
    assert share.threads() == 2
    assert CpuShare(1).threads() == 1


@pytest.mark.slow
def test_a_real_busy_process_takes_a_thread_away() -> None:
    """/proc/stat and this process's own times, with a real spinning neighbour."""
    share = CpuShare(2, interval_s=0.5)
    if len(share.cpus) < 2:
        pytest.skip("needs 2 usable cores")
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(1.0)
        share.threads()  # starts the interval with the neighbour running
        time.sleep(1.0)
        assert share.threads() == 1, share.others
    finally:
        busy.kill()
        busy.wait()
