"""The one folder a served dashboard may read and write: paths from the page are checked here.

A path typed in the page (a YAML file to load or save, a results folder, a bundle to replay)
is taken relative to the workspace, resolved (symlinks followed, `..` collapsed) and refused
with one ConfigError unless it stays inside the workspace. Saving also refuses a target that is
not a `.yaml`/`.yml` file once resolved, so a link named `x.yaml` cannot turn Save into a
write over another kind of file. `workspace=None` checks nothing: a notebook user's own paths,
relative to the working directory as Python's are.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import param

from workbench._files import results_dir
from workbench.errors import ConfigError

__all__ = [
    "YAML_SUFFIXES",
    "dashboard_folders",
    "inside",
    "shown_path",
    "workspace_param",
    "yaml_target",
]

YAML_SUFFIXES = (".yaml", ".yml")
"""The file names Save writes."""


def workspace_param() -> Any:
    """The `workspace` param every component that takes paths from the page declares."""
    return param.String(
        default=None,
        allow_None=True,
        doc="the folder that paths typed in the page must stay inside (relative ones are "
        "taken from it); None: no limit, paths relative to the working directory (a notebook)",
    )


def results_dir_param(doc: str) -> Any:
    """The `results_dir` param of every component that reads or writes a results folder: by
    default the workbench's one results folder (`results_dir()`), found when the component
    is made, so a notebook, a magic and the dashboard see the same bundles."""
    return param.String(default_factory=lambda: str(results_dir()), doc=doc)


def inside(workspace: str | Path | None, path: str | Path, what: str = "path") -> Path:
    """`path` resolved inside `workspace` (relative paths are taken from it); ConfigError
    naming `what` when it leads outside, by `..` or through a symbolic link."""
    given = Path(path)
    if workspace is None:
        return given
    root = Path(workspace).resolve()
    resolved = (root / given).resolve()  # an absolute `given` replaces root
    if not resolved.is_relative_to(root):
        raise ConfigError(
            f"{what}: {str(path)!r} is outside the workspace {str(root)!r}; use a path inside "
            "it (the dashboard's --workspace)"
        )
    return resolved


def dashboard_folders(
    results_dir: str | Path, workspace: str | Path | None = None
) -> tuple[Path, Path]:
    """(results folder, workspace) of a dashboard, both absolute: the workspace is the one
    given (`--workspace`), else the results folder itself (the one folder its owner named; the
    folder the dashboard was started in may be a whole home directory). ConfigError when the
    results folder is not inside the workspace given."""
    results = Path(results_dir).resolve()
    root = Path(workspace).resolve() if workspace is not None else results
    if not results.is_relative_to(root):
        raise ConfigError(
            f"--results: {str(results)!r} is outside the workspace {str(root)!r}; give a "
            "results folder inside --workspace"
        )
    return results, root


def yaml_target(workspace: str | Path | None, path: str | Path, what: str = "save") -> Path:
    """Where Save may write `path`: inside the workspace, a .yaml/.yml name once resolved, and
    not a folder or other non-regular file; ConfigError naming `what` otherwise."""
    if not str(path).strip():
        raise ConfigError(f"{what}: type a .yaml or .yml file name first")
    target = inside(workspace, path, what)
    resolved = target.resolve()
    if Path(path).suffix not in YAML_SUFFIXES or resolved.suffix not in YAML_SUFFIXES:
        raise ConfigError(f"{what}: use a .yaml or .yml file name, got {str(path)!r}")
    if resolved.exists() and not resolved.is_file():
        raise ConfigError(f"{what}: {str(path)!r} is not a regular file; choose another name")
    return target


def shown_path(path: str | Path) -> str:
    """`path` as a person reads it on the page: relative to the working directory the dashboard
    (or the notebook) was started in when it lies inside it, as `workbench run` prints its
    bundle (`results/<run_id>`); else as given."""
    given = Path(path)
    try:
        return str(given.resolve().relative_to(Path.cwd().resolve()))
    except (OSError, ValueError):
        return str(given)
