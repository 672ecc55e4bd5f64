"""Atomic file writes and file hashes: the one implementation every writer in the package uses;
and the results folder every way in (CLI, dashboard, JupyterLab tile, notebooks, magics,
`panel serve`) shares.

A write goes to a temp file beside its target, is fsynced, renamed over the target and the
directory entry fsynced, so a process killed at any moment leaves the old file or the new one,
never half of one.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

RESULTS_NAME = "results"
"""The results folder's name inside a project (see `results_dir`)."""

RESULTS_DIR_ENV = "WORKBENCH_RESULTS_DIR"
"""The environment variable that names the results folder outright."""

PROJECT_MARKERS = ("pyproject.toml", ".git")
"""Files that mark a project's root folder, whose `results/` is the results folder."""

RESULTS_DEFAULT = (
    f"${RESULTS_DIR_ENV}, else {RESULTS_NAME}/ at the project root (the nearest folder up "
    f"with a {' or '.join(PROJECT_MARKERS)}), else ./{RESULTS_NAME}"
)
"""Where the results folder is when none is given, in words (for help texts)."""

CHUNK = 1 << 20
"""Bytes read at a time when hashing a file."""


def results_dir(given: str | Path | None = None) -> Path:
    """The results folder: where runs write their bundles and where the CLI, the dashboard,
    the JupyterLab tile, the notebooks, the magics and `panel serve` look.

    `given` when given (a command's --out or --results, a config's output.dir); else
    $WORKBENCH_RESULTS_DIR; else `results/` in the project root, the nearest folder at or
    above the current directory that holds a pyproject.toml or .git (so a notebook run from
    notebooks/ and a dashboard started at the root see the same bundles); else ./results.
    Resolved at each call, never at import: the current directory is the caller's now.
    """
    if given is not None and str(given):
        return Path(given)
    named = os.environ.get(RESULTS_DIR_ENV, "").strip()
    if named:
        return Path(named).expanduser().absolute()
    here = Path.cwd()
    for folder in (here, *here.parents):
        if any((folder / marker).exists() for marker in PROJECT_MARKERS):
            return Path(RESULTS_NAME) if folder == here else folder / RESULTS_NAME
    return Path(RESULTS_NAME)  # relative where it is in the current directory: printed short


def fsync_dir(directory: str | Path) -> None:
    """Flush a directory entry (a rename, a new file) to disk where the platform allows it."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write(path: str | Path, write: Callable[[IO[bytes]], object]) -> Path:
    """Write `path` through `write(file)` into a temp file beside it, fsync, rename, fsync dir."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)
    return path


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Atomically write bytes."""
    return atomic_write(path, lambda handle: handle.write(data))


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Atomically write UTF-8 text."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()
