"""The example run configs shipped inside the package (`workbench/examples/*.yaml`), by name.

They reach an installed wheel as package data, with the population specs they name beside them
(`examples/personas/`), so `example_path("quickstart")` runs from any directory.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from workbench.errors import ConfigError

__all__ = ["example_names", "example_path", "examples_dir"]

SUFFIX = ".yaml"


def examples_dir() -> Path:
    """The folder of packaged examples (inside the installed or checked-out package)."""
    return Path(str(files("workbench") / "examples"))


def example_names() -> list[str]:
    """Names of the packaged example configs (file stems), sorted."""
    return sorted(p.stem for p in examples_dir().glob(f"*{SUFFIX}") if p.is_file())


def example_path(name: str) -> Path:
    """The packaged config of example `name` ("quickstart" or "quickstart.yaml").

    ConfigError listing the available examples for an unknown name.
    """
    stem = name.removesuffix(SUFFIX)
    names = example_names()
    if stem not in names:
        listed = ", ".join(names) or "none"
        raise ConfigError(f"example {name!r} not found; available examples: {listed}")
    return examples_dir() / f"{stem}{SUFFIX}"
