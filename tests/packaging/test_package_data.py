"""Example configs and the paper's population specs ship inside the package, in one copy.

The repo-root `personas/paper-*.yaml` are symlinks to the packaged files (README and tests use
those paths); every example config validates and finds its population in the package folder.
"""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from workbench._examples import example_names, example_path, examples_dir
from workbench.config import PopulationSpec, load_population_spec, load_run_config
from workbench.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "workbench"
PAPER_SPECS = ("paper-education.yaml", "paper-profession.yaml")


@pytest.mark.parametrize("name", PAPER_SPECS)
def test_repo_root_personas_link_to_the_packaged_specs(name: str) -> None:
    link = ROOT / "personas" / name
    packaged = PACKAGE / "examples" / "personas" / name
    assert link.is_symlink(), f"personas/{name} must be a symlink (one source of truth)"
    assert not packaged.is_symlink() and packaged.is_file()
    assert link.resolve() == packaged.resolve()
    assert load_population_spec(link) == load_population_spec(packaged)


def test_git_stores_the_links_as_symlinks() -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(
        ["git", "ls-files", "-s", "personas"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split("\n")
    modes = {line.split("\t")[-1]: line.split()[0] for line in listed if line}
    for name in PAPER_SPECS:
        assert modes.get(f"personas/{name}") == "120000", modes  # a git symlink, not a copy
    assert "*.parquet" in (ROOT / "personas" / ".gitignore").read_text().split()


def test_examples_dir_is_the_package_folder() -> None:
    assert examples_dir().resolve() == (PACKAGE / "examples").resolve()
    assert "quickstart" in example_names()
    assert example_path("quickstart") == example_path("quickstart.yaml")
    assert example_path("quickstart").is_file()


def test_unknown_example_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"'nope' not found; available examples: .*quickstart"):
        example_path("nope")
    with pytest.raises(ConfigError, match="not found"):
        example_path("personas/paper-education")  # a spec, not an example config


@pytest.mark.parametrize("name", example_names())
def test_every_example_validates_from_the_package(name: str) -> None:
    path = example_path(name)
    raw = yaml.safe_load(path.read_text())
    if isinstance(raw.get("population"), str):
        population = (path.parent / raw["population"]).resolve()
        assert population.is_file(), f"{name}: population {raw['population']!r} not packaged"
        assert population.is_relative_to(examples_dir().resolve()), (
            f"{name}: population {raw['population']!r} lies outside the package"
        )
    config = load_run_config(path)
    assert isinstance(config.population, PopulationSpec)


def test_package_data_covers_every_example_file() -> None:
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"
    ]["workbench"]
    shipped = {path for pattern in globs for path in PACKAGE.glob(pattern)}  # setuptools' globbing
    files = {p for p in (PACKAGE / "examples").rglob("*") if p.is_file()}
    missed = sorted(p.relative_to(PACKAGE).as_posix() for p in files - shipped)
    assert files and missed == [], f"files under workbench/examples not in package-data: {missed}"
