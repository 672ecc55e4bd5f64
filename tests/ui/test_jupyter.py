"""Jupyter: small escaped reprs of specs and bundles, the IPython extension and its
`%%workbench_run` magic in a real InteractiveShell (the Launcher tile's entry:
tests/ui/server/test_proxy.py)."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import interruptible

from workbench.config import PopulationSpec, RunConfig, parse_run_config
from workbench.errors import ConfigError
from workbench.results import Bundle, verify_bundle

REPO = Path(__file__).resolve().parents[2]
EDUCATION_YAML = REPO / "personas" / "paper-education.yaml"
MAX_REPR_CHARS = 20_000

LEVEL_K_CELL = """\
name: cell-run
seed: 5
n_agents: 24
population: personas/edu.yaml
game:
  rounds: 2
policy:
  kind: level_k
backend:
  agents_per_shard: 10
"""


def evil_spec(categories: int = 3) -> PopulationSpec:
    """A spec with a `<script>` category, `categories` more, and a conditional dimension."""
    names = ["<script>alert(1)</script>", *(f"c{i}" for i in range(categories))]
    shares = {name: 1 / len(names) for name in names}
    return PopulationSpec(
        name="evil & co",
        dimensions=[
            {"name": "group", "shares": shares},
            {"name": "job", "given": "group", "shares": {n: {"a": 0.25, "b": 0.75} for n in names}},
        ],
        persona_template="You are in {group} <b>and</b> work as {job}.",
    )


# --------------------------------------------------------------------------- reprs


def test_population_repr_escapes_and_shows_the_conditioning() -> None:
    out = evil_spec()._repr_html_()
    assert "<script>" not in out and "<b>and</b>" not in out
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in out
    assert "evil &amp; co" in out and "2 dimensions, sampling quota" in out
    assert "group=c0" in out and "75%" in out  # job given group: one row per parent category
    assert "25%" in out and "not shown" not in out


def test_population_repr_of_500_categories_is_bounded_with_a_note() -> None:
    out = evil_spec(categories=499)._repr_html_()
    assert len(out) < MAX_REPR_CHARS
    # 12 rows per dimension shown: 500 - 12 group shares and 1000 - 12 job shares are cut
    assert f"\u2026 {500 - 12 + 1000 - 12:,} more shares not shown" in out


def test_run_config_repr_in_a_few_lines() -> None:
    config = parse_run_config(LEVEL_K_CELL.replace("personas/edu.yaml", str(EDUCATION_YAML)))
    out = config._repr_html_()
    assert isinstance(config, RunConfig) and len(out) < 3000
    parts = ["cell-run", "24 (seed 5)", "paper-education: gender (2), education (5)", "2 rounds",
             "level_k", "unused (policy level_k)", "agents_per_shard=10"]  # fmt: skip
    for part in parts:
        assert part in out, part


@pytest.fixture
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A real IPython InteractiveShell (history in memory), cwd a folder holding personas/."""
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    (tmp_path / "personas").mkdir()
    shutil.copy(EDUCATION_YAML, tmp_path / "personas" / "edu.yaml")
    monkeypatch.chdir(tmp_path)
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    ip = InteractiveShell.instance(config=config)
    try:
        yield ip
    finally:
        InteractiveShell.clear_instance()


def run_cell(ip: Any, line: str, cell: str) -> list[dict[str, Any]]:
    """Run `%%workbench_run line` and return what it displayed (each a mime bundle)."""
    from IPython.utils.capture import capture_output

    ip.run_line_magic("load_ext", "workbench.ui.jupyter")
    with capture_output() as captured:
        ip.run_cell_magic("workbench_run", line, cell)
    return [output.data for output in captured.outputs]


@pytest.fixture
def bundle(shell: Any, tmp_path: Path) -> Bundle:
    """A real two-round level-k bundle played by the magic."""
    run_cell(shell, f"--out {tmp_path / 'out'} --var played", LEVEL_K_CELL)
    return shell.user_ns["played"]


def test_bundle_repr_reads_the_manifest_only(
    bundle: Bundle, monkeypatch: pytest.MonkeyPatch
) -> None:
    import workbench.results.bundle as reader

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the repr read a data file")

    monkeypatch.setattr(reader, "read_parquet", refuse)
    out = bundle._repr_html_()
    assert bundle.run_id in out and "complete" in out and str(bundle.path) in out
    assert "engine=none, policy=level_k" in out and "2 of 2" in out
    stats = bundle.rounds_done[1]
    assert f"<td>{stats['n_winners']}</td>" in out and f"{stats['mean']:.4g}" in out


def test_bundle_repr_of_a_million_agents_and_1000_rounds_is_bounded(bundle: Bundle) -> None:
    manifest = dict(bundle.manifest)
    manifest["config"] = {**manifest["config"], "n_agents": 1_000_000}
    manifest["config"]["game"] = {**manifest["config"]["game"], "rounds": 1000}
    first = bundle.rounds_done[0]
    manifest["rounds"] = [{**first, "round": k} for k in range(1, 1001)]
    manifest["error"] = "<img src=x onerror=alert(1)>"
    out = Bundle(bundle.path, manifest)._repr_html_()
    assert len(out) < MAX_REPR_CHARS
    assert (
        "1,000,000" in out and "1000 of 1000" in out and "\u2026 990 more rounds not shown" in out
    )
    assert "<img" not in out and "&lt;img src=x" in out


def test_a_damaged_bundle_repr_shows_its_error(bundle: Bundle) -> None:
    out = Bundle(bundle.path, {**bundle.manifest, "status": "<odd>"})._repr_html_()
    assert "BundleError" in out and "&lt;odd&gt;" in out and "<odd>" not in out


# --------------------------------------------------------------------------- the extension


def test_the_extension_loads_and_unloads(shell: Any) -> None:
    shell.run_line_magic("load_ext", "workbench.ui.jupyter")
    assert "workbench_run" in shell.magics_manager.magics["cell"]
    shell.run_line_magic("unload_ext", "workbench.ui.jupyter")
    assert "workbench_run" not in shell.magics_manager.magics["cell"]


def test_load_ext_workbench(shell: Any) -> None:
    """`%load_ext workbench` needs the face to list the extension's hook: a face that loses it
    fails here (IPython's load_ext would only say the module is not an extension)."""
    import workbench

    assert "load_ipython_extension" in dir(workbench)
    shell.run_line_magic("load_ext", "workbench")
    assert "workbench_run" in shell.magics_manager.magics["cell"]


def test_workbench_run_plays_the_cell_and_shows_the_bundle(shell: Any, tmp_path: Path) -> None:
    outputs = run_cell(shell, f"--out {tmp_path / 'out'} --var played", LEVEL_K_CELL)
    bundle = shell.user_ns["played"]
    assert bundle.path.parent == tmp_path / "out" and bundle.is_complete
    assert verify_bundle(bundle.path).ok
    assert bundle.rounds_count == 2 and bundle.config.n_agents == 24
    htmls = [o["text/html"] for o in outputs if "text/html" in o]
    assert htmls == [bundle._repr_html_()]


def test_an_interrupt_cancels_the_run_and_shows_its_bundle(
    shell: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kernel's stop button (SIGINT in the main thread) cancels the run on its thread."""
    import threading

    import workbench.ui.jupyter as jupyter

    shown: list[Any] = []
    monkeypatch.setattr(jupyter, "display", lambda obj, **kw: shown.append(obj))
    slow = LEVEL_K_CELL.replace("rounds: 2", "rounds: 50").replace(
        "kind: level_k", "kind: random\n  latency_s: 0.2"
    )
    timer = threading.Timer(1.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with interruptible():  # the kernel's SIGINT, even where this job's is ignored
            run_cell(shell, f"--out {tmp_path / 'out'} --var played", slow)
    finally:
        timer.cancel()
    bundle = shell.user_ns["played"]
    assert shown[0] is bundle and bundle.status == "cancelled"
    assert 0 < bundle.rounds_count < 50
    problems = verify_bundle(bundle.path).problems
    assert len(problems) == 1 and problems[0].startswith("incomplete: status is cancelled")


def test_workbench_run_writes_under_the_configs_output_dir(shell: Any, tmp_path: Path) -> None:
    run_cell(shell, "--var played", LEVEL_K_CELL)
    assert shell.user_ns["played"].path.parent.resolve() == (tmp_path / "results").resolve()


def test_workbench_run_draws_a_histogram_when_holoviews_is_loaded(
    shell: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import holoviews as hv
    import holoviews.plotting.bokeh  # noqa: F401  (registers the bokeh renderer)

    import workbench.ui.jupyter as jupyter

    shown: list[Any] = []
    monkeypatch.setattr(jupyter, "display", lambda obj, **kw: shown.append(obj))
    run_cell(shell, f"--out {tmp_path / 'out'}", LEVEL_K_CELL)
    assert isinstance(shown[0], Bundle) and isinstance(shown[1], hv.Overlay)
    bars = shown[1].get(0)
    assert int(bars.dimension_values("count").sum()) == 24  # every agent's guess is a bar


@pytest.mark.slow
def test_the_magic_runs_in_a_real_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """nbclient runs a notebook that loads the extension, runs a cell config and shows it."""
    import nbclient
    import nbformat

    (tmp_path / "personas").mkdir()
    shutil.copy(EDUCATION_YAML, tmp_path / "personas" / "edu.yaml")
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    new = nbformat.v4.new_code_cell
    nb = nbformat.v4.new_notebook()
    sources = [
        "%load_ext workbench.ui.jupyter",
        "import holoviews as hv\nhv.extension('bokeh')",
        "%%workbench_run --out out --var played\n" + LEVEL_K_CELL,
        "print(played.status, played.rounds_count)",
        "%%workbench_run\nname: [x\n",
    ]
    nb.cells = [new(source) for source in sources]
    nbclient.NotebookClient(
        nb, timeout=240, resources={"metadata": {"path": str(tmp_path)}}
    ).execute()
    run, status, error = (cell.outputs for cell in nb.cells[2:])
    kinds = [sorted(o.get("data", {})) for o in run]
    assert ["text/html", "text/plain"] in kinds  # the bundle's view
    assert any("application/vnd.holoviews_exec.v0+json" in k for k in kinds)  # the histogram
    assert status[0]["text"] == "complete 2\n"
    assert error[0]["data"]["text/plain"].startswith("ConfigError: %%workbench_run cell: not valid")
    assert len(list((tmp_path / "out").iterdir())) == 1


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        ("name: [unclosed\n", "ConfigError: %%workbench_run cell: not valid YAML at line 2"),
        (LEVEL_K_CELL.replace("rounds: 2", "rounds: 0"),
         "ConfigError: %%workbench_run cell: game.rounds: must be at least 1, got 0"),
        (LEVEL_K_CELL.replace("edu.yaml", "nope.yaml"),
         "ConfigError: %%workbench_run cell: population: file 'personas/nope.yaml' not found"),
        (LEVEL_K_CELL.replace("kind: level_k", "kind: level_k\n  attribute: city"),
         "ConfigError: policy.attribute: 'city' is not a population dimension"),
    ],
    ids=["not-yaml", "bad-value", "no-population-file", "unknown-dimension"],
)  # fmt: skip
def test_a_bad_config_shows_its_error_line_and_writes_nothing(
    shell: Any, tmp_path: Path, cell: str, message: str
) -> None:
    outputs = run_cell(shell, f"--out {tmp_path / 'out'} --var played", cell)
    assert len(outputs) == 1 and outputs[0]["text/plain"].startswith(message)
    assert "Traceback" not in outputs[0]["text/plain"]
    assert not (tmp_path / "out").exists() and not (tmp_path / "results").exists()
    assert "played" not in shell.user_ns


def test_a_bad_var_name_is_a_usage_error(shell: Any, tmp_path: Path) -> None:
    from IPython.core.error import UsageError

    with pytest.raises(UsageError, match="--var '2x': give a Python variable name"):
        run_cell(shell, f"--out {tmp_path / 'out'} --var 2x", LEVEL_K_CELL)
    assert not (tmp_path / "out").exists()


def test_the_cell_loader_gives_the_file_loaders_messages(tmp_path: Path) -> None:
    text = "name: x\nname: y\n"
    (tmp_path / "c.yaml").write_text(text)
    from workbench.config import load_run_config

    with pytest.raises(ConfigError) as from_file:
        load_run_config(tmp_path / "c.yaml")
    with pytest.raises(ConfigError) as from_text:
        parse_run_config(text, str(tmp_path / "c.yaml"))
    assert str(from_text.value) == str(from_file.value)
    assert "duplicate key 'name'" in str(from_text.value)


# --------------------------------------------------------------------------- %workbench


def test_the_workbench_line_magic_returns_the_whole_app_inline(shell: Any, tmp_path: Path) -> None:
    from IPython.core.error import UsageError

    from workbench.ui.app import TABS, WorkbenchApp

    shell.run_line_magic("load_ext", "workbench")
    app = shell.run_line_magic("workbench", f"--results {tmp_path / 'r'} --tab Run")
    assert isinstance(app, WorkbenchApp)
    assert app.results_dir == str(tmp_path / "r") and app.tab == "Run"
    tabs = app.__panel__()  # no server session: plain tabs, no page shell
    assert [name for name, _ in zip(TABS, tabs.objects, strict=True)] == list(TABS)
    assert tabs.active == TABS.index("Run")
    with pytest.raises(UsageError, match="--tab 'Runs': choose one of Population, Run"):
        shell.run_line_magic("workbench", "--tab Runs")
    shell.run_line_magic("unload_ext", "workbench")
    assert "workbench" not in shell.magics_manager.magics["line"]
