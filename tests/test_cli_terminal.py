"""`workbench run` in a terminal: the round table prints above the progress bar, whole lines,
never cut by the bar (run on a pseudo-terminal of 100 columns, the screen replayed)."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from cli_helpers import SLOW_RUN_YAML, TIMEOUT_S

pytestmark = pytest.mark.slow  # a `workbench run` subprocess of a few seconds

COLUMNS = 100


def in_a_terminal(args: list[str], cwd: Path) -> str:
    """What a command writes to a 30x100 pseudo-terminal (stdout and stderr, as a user sees)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 30, COLUMNS, 0, 0))
    process = subprocess.Popen(
        [sys.executable, "-m", "workbench.cli", *args],
        cwd=cwd,
        stdin=follower,
        stdout=follower,
        stderr=follower,
        close_fds=True,
    )
    os.close(follower)
    out = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the follower closed: the command ended
            break
        if not chunk:
            break
        out += chunk
    os.close(leader)
    assert process.wait(timeout=TIMEOUT_S) == 0, out.decode(errors="replace")
    return out.decode()


def screen(text: str) -> list[str]:
    """The lines a terminal shows once `text` is written: `\\r` returns to the line's start
    and the next characters overwrite it, `\\n` moves down (enough for tqdm's output)."""
    lines: list[str] = []
    for raw in text.replace("\r\n", "\n").split("\n"):
        line: list[str] = []
        for part_number, part in enumerate(raw.split("\r")):
            if part_number:
                line = list(part) + line[len(part) :]
            else:
                line = list(part)
        lines.append("".join(line).rstrip())
    return [line for line in lines if line]


def test_the_round_table_prints_above_the_progress_bar(tmp_path: Path) -> None:
    (tmp_path / "slow.yaml").write_text(SLOW_RUN_YAML)
    shown = screen(in_a_terminal(["run", "slow.yaml", "--set", "game.rounds=3"], tmp_path))
    header = next(i for i, line in enumerate(shown) if line.split()[:2] == ["round", "n"])
    rows = shown[header + 1 : header + 4]
    assert [row.split()[0] for row in rows] == ["1", "2", "3"], shown
    assert all(len(row.split()) >= 8 and "%|" not in row for row in rows), rows  # whole lines
    bar = shown[header + 4]
    assert "100%|" in bar and "3/3" in bar, shown  # the bar below the table, finished
    assert shown[-1].startswith("bundle: results/slow-"), shown


def test_piped_the_rows_come_alone_each_on_its_line(tmp_path: Path) -> None:
    """stdout and stderr into one pipe (`2>&1 | tee log`): no bar to glue itself onto the rows;
    the header and each round's row are whole lines of their own."""
    (tmp_path / "slow.yaml").write_text(SLOW_RUN_YAML)
    args = ["run", "slow.yaml", "--set", "game.rounds=2", "--set", "policy.latency_s=0.1"]
    done = subprocess.run(
        [sys.executable, "-m", "workbench.cli", *args],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=TIMEOUT_S,
        check=True,
    )
    lines = done.stdout.decode().splitlines()
    assert "\r" not in done.stdout.decode() and not [line for line in lines if "%|" in line]
    header = next(i for i, line in enumerate(lines) if line.split()[:2] == ["round", "n"])
    assert [row.split()[0] for row in lines[header + 1 : header + 3]] == ["1", "2"], lines
    assert lines[-1].startswith("bundle: results/slow-"), lines
