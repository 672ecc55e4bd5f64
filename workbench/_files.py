"""Atomic file writes and file hashes: the one implementation every writer in the package uses.

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

RESULTS_DIR = "results"
"""The default results folder (relative to the current directory): where runs write their
bundles and where the CLI, the dashboard and the notebook magic look, unless told otherwise."""

CHUNK = 1 << 20
"""Bytes read at a time when hashing a file."""


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
