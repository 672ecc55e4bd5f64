"""Running `workbench` commands in tests: as subprocesses (alone or several at once) or in
this process through `workbench.cli.main`, and the shape every user error must have."""

from __future__ import annotations

import contextlib
import io
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

TIMEOUT_S = 120

SLOW_RUN_YAML = """\
name: slow
seed: 5
n_agents: 20
population:
  name: tiny
  dimensions:
    - name: gender
      shares: {male: 1/2, female: 1/2}
game: {rounds: 6}
policy: {kind: random, latency_s: 1.0}
"""
"""A run that takes about a second a round with no model (6 rounds of 20 random agents), for
tests that kill, cancel or follow a `workbench run` while it plays."""


def workbench(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run `python -m workbench.cli ARGS` in `cwd` and capture its output."""
    return subprocess.run(
        [sys.executable, "-m", "workbench.cli", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


Result = subprocess.CompletedProcess[str]


def run_all(cases: dict[str, list[str | Path]], cwd: Path) -> dict[str, Result]:
    """Run several `python -m workbench.cli` commands at once; name -> finished result."""
    procs = {
        name: subprocess.Popen(
            [sys.executable, "-m", "workbench.cli", *map(str, args)],
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, args in cases.items()
    }
    results = {}
    try:
        for name, proc in procs.items():
            stdout, stderr = proc.communicate(timeout=TIMEOUT_S)
            results[name] = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    finally:
        for proc in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return results


def in_process(args: list[str | Path], cwd: Path) -> Result:
    """Run `workbench ARGS` through `workbench.cli.main` in this process, like a subprocess."""
    from workbench.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["workbench", *map(str, args)]
    try:
        with (
            contextlib.chdir(cwd),
            contextlib.redirect_stdout(stdout),
            contextlib.redirect_stderr(stderr),
            pytest.raises(SystemExit) as info,
        ):
            main()
    finally:
        sys.argv = argv
    code = info.value.code
    code = 0 if code is None else code if isinstance(code, int) else 1
    return subprocess.CompletedProcess(args, code, stdout.getvalue(), stderr.getvalue())


def assert_user_error(result: Result, *needles: str) -> str:
    """Exit 2, one stderr line "error: ..." containing every needle, no traceback."""
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    line = lines[0]
    assert line.startswith("error: "), line
    assert "Traceback" not in result.stderr + result.stdout
    for needle in needles:
        assert needle in line, (needle, line)
    return line


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """SIGINT delivered while inside, to this process and to children started inside.

    A process whose SIGINT is ignored (under nohup, or a non-interactive shell's `&`, as a CI
    job may be started) passes the ignoring on to its children, and Python then never raises
    KeyboardInterrupt: the tests of Ctrl-C would test nothing. A handled SIGINT is reset to
    the default in a child, so handling it here for the moment makes both interruptible."""
    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    if ignored:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if ignored:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
