"""No foreign markup: every component drawn over hostile texts (folder names, a manifest's run
id, error, name and model, category and dimension names, a model server's error, persona text,
messages) puts no tag or attribute that could run script into the page, and shows each text as
the text it is. The Bokeh models Panel builds are what reach the browser, so they are what is
read: every Markdown, Alert and HTML pane, every Card title, every table column title, in every
inner tab."""

from __future__ import annotations

from pathlib import Path

import hostile
import panel as pn
import pytest
from bokeh.document import Document
from pane_text import live_markup, model_html, text_of

from workbench.config import PopulationSpec
from workbench.ui import PersonaPreview, PopulationEditor
from workbench.ui.cluster_monitor import ClusterMonitor
from workbench.ui.results_explorer import ResultsExplorer
from workbench.ui.run_launcher import RunLauncher
from workbench.ui.safe_text import html_text, md, md_lines


@pytest.fixture(scope="module")
def hostile_results_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hostile") / "results"
    hostile.plant_results(root)
    return root


def drawn(component: object) -> list[str]:
    """The HTML of every markup model of `component` as drawn, with each inner tab opened in
    turn (a dynamic tab draws only when opened)."""
    layout = pn.panel(component)
    root = layout.get_root(Document())
    fragments: list[str] = []

    def collect() -> None:
        fragments.extend(f for m in root.references() if (f := model_html(m)) is not None)

    collect()
    for tabs in layout.select(pn.Tabs):
        for index in range(len(tabs)):
            tabs.active = index
            collect()
    return fragments


def assert_inert(fragments: list[str], *shown: str) -> None:
    """No fragment holds live markup, and each of `shown` reads as text in one of them."""
    live = {f: live_markup(f) for f in fragments if live_markup(f)}
    assert live == {}, live
    texts = " ".join(text_of(f) for f in fragments)
    for text in shown:
        assert " ".join(text.split()) in texts, (text, texts[:2000])


HOSTILE = "<img src=x onerror=alert(1)> [x](javascript:alert(1)) ![i](x) `c` **b** <script>"


def test_escaped_text_renders_as_exactly_itself_in_markdown_and_html() -> None:
    for render in (pn.pane.Markdown, pn.pane.Alert):
        fragments = drawn(render(md(HOSTILE)))
        assert_inert(fragments, HOSTILE)
    assert_inert(drawn(pn.pane.Alert(md_lines(f"{HOSTILE}\n- {HOSTILE}"))), HOSTILE)
    card = pn.Card(pn.pane.Str("body"), title=html_text(HOSTILE))
    assert_inert(drawn(card), HOSTILE)
    # the check can fail: the same text unescaped is live markup
    assert live_markup(" ".join(drawn(pn.pane.Markdown(HOSTILE))))


def test_the_results_explorer_over_hostile_folders_and_manifests(hostile_results_dir: Path) -> None:
    explorer = ResultsExplorer(
        results_dir=str(hostile_results_dir), workspace=str(hostile_results_dir)
    )
    assert explorer.run_id == hostile.RUN_ID  # the newest bundle: the planted one
    explorer.table = "personas"  # its columns (one named like a tag) are the table's titles
    explorer.compared = list(explorer.param.compared.objects)
    explorer.report = __import__("asyncio").run(explorer.verify())
    fragments = drawn(explorer)
    assert_inert(
        fragments,
        f"{hostile.RUN_ID} is failed: {hostile.ERROR}",
        f"{hostile.DAMAGED}: not readable as a bundle",
        hostile.PERSONA_COLUMN,
        hostile.FOLDER,  # verify's report names the bundle's folder
    )


def test_the_results_explorer_refuses_a_hostile_folder_outside_its_workspace(
    hostile_results_dir: Path,
) -> None:
    explorer = ResultsExplorer(
        results_dir=str(hostile_results_dir), workspace=str(hostile_results_dir)
    )
    explorer.results_dir = f"../{hostile.FOLDER}"
    assert explorer.bundles.empty and "outside the workspace" in explorer.problem
    assert_inert(drawn(explorer), f"'../{hostile.FOLDER}' is outside the workspace")


def test_the_population_editor_with_hostile_dimension_and_category_names(
    hostile_results_dir: Path,
) -> None:
    spec = PopulationSpec.model_validate(hostile.population())
    editor = PopulationEditor(spec=spec, workspace=str(hostile_results_dir))
    assert_inert(drawn(editor), f"origin = {hostile.CATEGORY}", f"origin = {hostile.LINK_CATEGORY}")
    editor.load(hostile.SPEC_FILE)  # an invalid spec: its dimension's card and message
    assert editor.spec is None and hostile.DIMENSION in editor.message
    editor._act(editor.load, f"{hostile.FOLDER}.yaml")  # the error names the missing file
    assert hostile.FOLDER in editor.action_message
    assert_inert(drawn(editor), hostile.DIMENSION, f"{hostile.FOLDER}.yaml")


def test_the_persona_preview_with_hostile_personas_and_model_errors() -> None:
    spec = PopulationSpec.model_validate(hostile.population())
    preview = PersonaPreview(spec=spec, n=6, n_cards=6)
    preview.param.update(
        backgrounds=[
            {"agent_id": 0, "persona": hostile.NAME, "source": "template", "error": hostile.ERROR}
        ],
        writer_message=f"the model failed: {hostile.ERROR}",
        writer_failed=True,
    )
    assert_inert(drawn(preview), f"model error: {hostile.ERROR}", "agent 0 (template)")
    failing = PersonaPreview(spec=None, problem=hostile.ERROR)
    assert_inert(drawn(failing), hostile.ERROR)


def test_the_run_launcher_showing_hostile_errors_and_bundle_paths(
    hostile_results_dir: Path,
) -> None:
    launcher = RunLauncher(results_dir=str(hostile_results_dir), workspace=str(hostile_results_dir))
    launcher.param.update(
        message=f"model server said: {hostile.ERROR}",
        message_failed=True,
        check_message=hostile.MODEL,
        check_failed=True,
        status="failed",
        error=hostile.ERROR,
        bundle=str(hostile_results_dir / hostile.FOLDER),
    )
    assert_inert(
        drawn(launcher),
        f"model server said: {hostile.ERROR}",
        hostile.MODEL,
        f"failed: {hostile.ERROR}",
        f"bundle {hostile_results_dir / hostile.FOLDER}",
    )


def test_the_cluster_monitor_showing_hostile_messages(hostile_results_dir: Path) -> None:
    monitor = ClusterMonitor(
        results_dir=str(hostile_results_dir), workspace=str(hostile_results_dir)
    )
    monitor.param.update(message=hostile.ERROR, message_kind="danger", cluster=hostile.MODEL)
    assert_inert(drawn(monitor), hostile.ERROR, hostile.MODEL)
    layout = pn.panel(monitor)
    labels = [w.name for w in layout.select(pn.widgets.TextInput)]
    assert "Ray address" not in labels  # the cluster comes from --ray only, never the page


def test_the_notebook_reprs_of_a_hostile_bundle_and_spec_are_escaped(
    hostile_results_dir: Path,
) -> None:
    from workbench.results import Bundle

    bundle = Bundle.open(
        hostile_results_dir / hostile.FOLDER
    )  # its config name is refused when read
    plain = next(
        Bundle.open(p) for p in hostile_results_dir.iterdir() if p.name.startswith("plain")
    )
    spec = PopulationSpec.model_validate(hostile.population())
    reprs = (bundle._repr_html_(), spec._repr_html_(), plain.config._repr_html_())
    for fragment in reprs:
        assert live_markup(fragment) == [], fragment
    assert hostile.RUN_ID in text_of(reprs[0]) and hostile.ERROR in text_of(reprs[0])
    assert hostile.CATEGORY in text_of(reprs[1])
