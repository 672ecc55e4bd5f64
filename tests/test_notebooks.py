"""The notebooks as committed: no outputs, a figure sentence first, a papermill parameters cell.

nbval executes them (the README's test command collects notebooks/ with --nbval-lax); this
file checks how they are stored, so a notebook saved with its outputs or without parameters
fails here with its name."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
PAPER_NOTEBOOKS = (
    "01-quickstart",
    "02-scale",
    "03-prompts",
    "04-multi-round",
    "05-demographics",
    "06-variants",
    "07-behavioural-baseline",
)
"""One notebook per experiment of Pan et al. (issue 10), in the order the README lists them."""

TOOL_NOTEBOOKS = ("08-workbench-in-jupyter",)
"""Notebooks that show the workbench itself (its magics and components, issue 11)."""

PARAMETERS = {"n_agents", "rounds", "seed", "results"}
"""Names every parameters cell sets, so `papermill -p n_agents 1000000 ...` works."""

MODEL_PARAMETERS = {"model", "base_url", "model_name"}
"""And those that choose the model (`-p base_url http://host:8000/v1`), except where no model
answers: the scale notebook's dummy agents call none."""

WITHOUT_MODEL = {"02-scale"}


def notebook_paths() -> list[Path]:
    return sorted(NOTEBOOKS.glob("*.ipynb"))


def test_every_paper_experiment_has_its_notebook() -> None:
    assert [p.stem for p in notebook_paths()] == [*PAPER_NOTEBOOKS, *TOOL_NOTEBOOKS]


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.stem)
def test_committed_without_outputs(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    for number, cell in enumerate(notebook.cells, 1):
        if cell.cell_type != "code" or "keep_output" in cell.metadata.get("tags", []):
            continue
        assert cell.outputs == [], f"{path.name} cell {number} has outputs: clear them"
        assert cell.execution_count is None, f"{path.name} cell {number} has an execution count"


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.stem)
def test_opens_with_the_figure_it_regenerates(path: Path) -> None:
    first = nbformat.read(path, as_version=4).cells[0]
    assert first.cell_type == "markdown"
    title, *rest = first.source.strip().splitlines()
    assert re.match(rf"# {path.stem[:2]} \S", title), f"{path.name}: title '# NN ...' first"
    assert re.search(r"\b(Figs?\.|figure)", " ".join(rest)), f"{path.name}: name the figure"


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.stem)
def test_has_one_papermill_parameters_cell(path: Path) -> None:
    cells = [
        cell
        for cell in nbformat.read(path, as_version=4).cells
        if "parameters" in cell.metadata.get("tags", [])
    ]
    assert len(cells) == 1, f"{path.name}: tag exactly one cell `parameters`"
    assigned = {
        target.id
        for node in ast.parse(cells[0].source).body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    wanted = PARAMETERS | (set() if path.stem in WITHOUT_MODEL else MODEL_PARAMETERS)
    assert wanted <= assigned, f"{path.name}: parameters lacks {wanted - assigned}"


INTERACTIVE = re.compile(
    r"\bplots\.|\bhv\.|\bpn\.(?!state\.served)|%workbench\b|%%workbench_run|"
    r"ResultsExplorer\(|ClusterMonitor\(|\.servable\("
)
"""What draws with HoloViews, Panel or Bokeh in a notebook (the magics draw too)."""

SETUP = "notebook_setup("
"""The one call that loads the plotting extensions, inlined (workbench.ui.jupyter)."""


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.stem)
def test_plotting_is_set_up_before_the_first_interactive_plot(path: Path) -> None:
    """An interactive plot shown before `notebook_setup()` prints as text (`:Overlay ...`), and
    one drawn from a CDN shows nothing offline; the setup is the only place that loads them."""
    code = "\n".join(
        c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"
    )
    assert not re.search(r"\b(hv|pn)\.extension\(", code), (
        f"{path.name}: call wb.notebook_setup(...) instead of hv/pn.extension (it inlines them)"
    )
    first = INTERACTIVE.search(code)
    if first is not None:
        setup = code.find(SETUP)
        assert 0 <= setup < first.start(), (
            f"{path.name}: call wb.notebook_setup() before {first.group()!r} draws"
        )


@pytest.mark.parametrize("path", notebook_paths(), ids=lambda p: p.stem)
def test_bundles_go_to_the_workbench_results_folder(path: Path) -> None:
    """`results = None`: the workbench's one results folder (what the dashboard lists), never a
    folder relative to the notebook's own (notebooks/results)."""
    (cell,) = [
        c
        for c in nbformat.read(path, as_version=4).cells
        if "parameters" in c.metadata.get("tags", [])
    ]
    values = {
        target.id: node.value
        for node in ast.parse(cell.source).body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    assert isinstance(values["results"], ast.Constant) and values["results"].value is None
