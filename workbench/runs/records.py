"""Launch records: `<results>/.launches/<run_id>/launch.json`, one per detached run started by
`runs.launch`, beside the config it ran (`config.yaml`), its output (`run.log`), its exit code
once reaped (`exit.json`) and a cancel mark (`cancel.json`). JSON, never pickle.

A record is data on disk anyone with write access to the folder could plant: nothing here
trusts it. `runs.cancel` proves the process it names is that launch's own `workbench run`
before it signals anything.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench._files import atomic_write_text
from workbench.errors import BundleError

__all__ = [
    "CANCEL_FILE",
    "CONFIG_FILE",
    "EXIT_FILE",
    "LAUNCHES_DIR",
    "LAUNCH_FILE",
    "LOG_FILE",
    "Launch",
    "is_run_of",
    "launch_records",
]

LAUNCHES_DIR = ".launches"
"""The folder under a results directory that holds one folder per launch (not a bundle)."""
LAUNCH_FILE = "launch.json"
CONFIG_FILE = "config.yaml"
LOG_FILE = "run.log"
EXIT_FILE = "exit.json"
"""Written by the launching process when it reaps the run (its exit code)."""
CANCEL_FILE = "cancel.json"
"""Written by `cancel`: a run interrupted before it wrote a bundle reads cancelled, not failed."""


@dataclass(frozen=True)
class Launch:
    """One started run, as `launch.json` records it. `launch_id` is the run id the launcher
    chose and passed as `workbench run --run-id`, so the run's bundle is `results/<launch_id>`
    (`bundle`), known before the process starts."""

    launch_id: str
    folder: Path
    pid: int
    host: str
    started_at: str
    config_path: Path
    log_path: Path
    command: tuple[str, ...]
    name: str
    rounds: int

    @property
    def run_id(self) -> str:
        """The run id of the launch's bundle (its launch id)."""
        return self.launch_id

    @property
    def results_dir(self) -> Path:
        """The results folder the launch writes into (the parent of `.launches`)."""
        return self.folder.parent.parent

    @property
    def bundle(self) -> Path:
        """The bundle the launch's run writes: `results/<run id>`."""
        return self.results_dir / self.launch_id

    def to_dict(self) -> dict[str, Any]:
        """The record as plain JSON data."""
        return {
            "launch_id": self.launch_id,
            "pid": self.pid,
            "host": self.host,
            "started_at": self.started_at,
            "config": str(self.config_path),
            "log": str(self.log_path),
            "command": list(self.command),
            "name": self.name,
            "rounds": self.rounds,
        }

    @classmethod
    def read(cls, folder: str | Path) -> Launch:
        """The launch recorded in `folder`; BundleError when its launch.json is unreadable.
        The launch id is the folder's name, whatever the file says."""
        folder = Path(folder)
        try:
            data = json.loads((folder / LAUNCH_FILE).read_text(encoding="utf-8"))
            return cls(
                launch_id=folder.name,
                folder=folder,
                pid=int(data["pid"]),
                host=str(data["host"]),
                started_at=str(data["started_at"]),
                config_path=Path(data["config"]),
                log_path=folder / LOG_FILE,
                command=tuple(str(a) for a in data["command"]),
                name=str(data["name"]),
                rounds=int(data["rounds"]),
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise BundleError(
                f"{folder / LAUNCH_FILE}: not a readable launch record ({type(exc).__name__}: "
                f"{exc}); delete the folder if the launch is of no use"
            ) from None

    def save(self) -> None:
        """Write launch.json atomically."""
        atomic_write_text(self.folder / LAUNCH_FILE, json.dumps(self.to_dict(), indent=2))


def launch_records(results_dir: str | Path) -> list[Launch]:
    """The launch records under `results_dir`, newest first (unreadable ones skipped)."""
    root = Path(results_dir).absolute() / LAUNCHES_DIR
    records = []
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        if folder.is_dir() and not folder.is_symlink():
            try:
                records.append(Launch.read(folder))
            except BundleError:
                continue
    return sorted(records, key=lambda r: (r.started_at, r.launch_id), reverse=True)


def is_run_of(command: tuple[str, ...] | None, record: Launch) -> bool:
    """Whether a process's command line is `workbench run` of `record`'s own config file
    (`.launches/<id>/config.yaml`) with `--run-id <id>`, as `runs.launch` starts it."""
    if not command:
        return False
    args = list(command)
    named = any(Path(a).name in ("workbench", "workbench.cli") for a in args)
    run_id = [b for a, b in zip(args, args[1:], strict=False) if a == "--run-id"]
    own_config = str(record.folder / CONFIG_FILE)
    return named and "run" in args and own_config in args and run_id == [record.launch_id]
