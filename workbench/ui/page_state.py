"""What the dashboard page keeps for its results folder: the population being edited, its N and
seed, and the Run form's settings, so that a reload or a new page shows them again.

As JupyterLab keeps a workspace's layout, the page writes its state to one JSON file in the
results folder (`STATE_FILE`) after each change, atomically, and a new page starts from it. The
file is data, read as data: JSON only, every value goes back through the same validation as a
value typed in the page (the editor's spec check, the form's keys), and a file that cannot be
used is set aside with one line saying why, never an error that stops the page. Two pages on one
folder share it: the last change wins. Nothing secret is in it (the form holds the names of
environment variables, never their values).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench._files import atomic_write_text

__all__ = ["STATE_FILE", "PageState", "read_state", "write_state"]

STATE_FILE = ".workbench-page.json"
"""The page's state, inside the results folder (beside its `.launches/`)."""

VERSION = 1
"""The state file's layout; a file of another version is not read."""


@dataclass(frozen=True)
class PageState:
    """The page's edits: the population as plain spec data, N, seed, the form's values and the
    config file name of the Run tab's Open/Save."""

    population: dict[str, Any] | None = None
    n_agents: int | None = None
    seed: int | None = None
    values: dict[str, Any] = field(default_factory=dict)
    config_path: str | None = None

    def to_json(self) -> str:
        """The state as the JSON the file holds."""
        data = {"version": VERSION, **self.__dict__}
        return json.dumps(data, indent=1, sort_keys=True, allow_nan=False) + "\n"


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def read_state(results_dir: str | Path) -> tuple[PageState | None, str]:
    """(the state kept in `results_dir`, "") or (None, why it was not read: "" when there is
    none). Only the shape is checked here; the values are checked where they are used."""
    path = Path(results_dir) / STATE_FILE
    if not path.is_file():
        return None, ""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return None, f"the page's saved state {path} could not be read ({exc}); starting afresh"
    if not isinstance(data, dict) or data.get("version") != VERSION:
        return None, f"the page's saved state {path} is not of this version; starting afresh"
    population = data.get("population")
    values = data.get("values")
    config_path = data.get("config_path")
    return (
        PageState(
            population=population if isinstance(population, dict) else None,
            n_agents=_int_or_none(data.get("n_agents")),
            seed=_int_or_none(data.get("seed")),
            values=values if isinstance(values, dict) else {},
            config_path=config_path if isinstance(config_path, str) else None,
        ),
        "",
    )


def write_state(results_dir: str | Path, state: PageState) -> Path | None:
    """Keep `state` in `results_dir` (atomically); None, keeping nothing, when the folder cannot
    be written or a value is not JSON (the page goes on either way)."""
    try:
        text = state.to_json()
    except (TypeError, ValueError):
        return None
    try:
        return atomic_write_text(Path(results_dir) / STATE_FILE, text)
    except OSError:
        return None
