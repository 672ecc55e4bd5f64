"""Packaging facts that drift silently: environment.yml vs pyproject, the public namespace."""

from __future__ import annotations

import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_environment_yml_pins_match_pyproject() -> None:
    project = _pyproject()["project"]
    wanted = set(project["dependencies"]) | set(project["optional-dependencies"]["dev"])
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert set(pip_section) - {"-e ."} == wanted
    assert "python=3.11" in env["dependencies"]


def test_lock_file_pins_every_direct_dependency() -> None:
    lock = {
        line.strip()
        for line in (ROOT / ".ci" / "requirements.lock").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    }
    project = _pyproject()["project"]
    extras = project["optional-dependencies"]
    for requirement in project["dependencies"] + extras["dev"] + extras["docs"]:
        assert requirement in lock, f"{requirement} is not pinned in .ci/requirements.lock"


def test_top_level_layout() -> None:
    allowed = {
        "pyproject.toml",
        "README.md",
        "docs",  # the docs site (Sphinx sources, its extension) and the screenshots
        "environment.yml",
        "workbench",
        "notebooks",
        "personas",
        "results",
        "tests",
    }
    tracked = {p.name for p in ROOT.iterdir() if not p.name.startswith(".")}
    assert tracked <= allowed | {"build", "dist"} | {p for p in tracked if p.endswith(".egg-info")}


def test_public_namespace_is_what_we_export() -> None:
    import workbench

    assert set(workbench.__all__) == {
        "BackendSpec", "Bundle", "BundleError", "ConfigError", "Experiment", "GameSpec",
        "ModelError", "ModelSpec", "PopulationSpec", "PromptSpec", "RoundFailedError", "RunConfig",
        "Simulation", "WorkbenchError",
        "__version__", "configure", "counts_table", "export_tidy", "follow", "generate_personas",
        "latest_bundle", "list_bundles",
        "load_population_spec", "load_run_config", "model_overrides", "notebook_setup",
        "reproduce", "results_dir", "run", "run_state",
        "sample_population",
        "save_yaml", "sweep", "verify_bundle",
    }  # fmt: skip
    for name in workbench.__all__:
        assert getattr(workbench, name) is not None
