"""ResultsExplorer on real bundles: the picker, the plots, compare, downloads, verify, messages."""

from __future__ import annotations

import asyncio
import base64
import io
import logging
import shutil
from pathlib import Path

import holoviews as hv
import pandas as pd
import panel as pn
import pyarrow.parquet as pq
import pytest
from pane_text import shown_text
from run_configs import run_config

from workbench.config import PopulationSpec, RunConfig
from workbench.population import sample_population
from workbench.results import Bundle, BundleWriter
from workbench.results.export import tidy_table
from workbench.runtime import Simulation
from workbench.ui.results_data import model_label
from workbench.ui.results_explorer import VIEWS, ResultsExplorer
from workbench.viz import plots

LEVEL_K = {"kind": "level_k", "noise_sd": 4.0}


def _config(spec: PopulationSpec, name: str, seed: int, ratio: float, rounds: int = 2) -> RunConfig:
    return run_config(
        spec,
        rounds=rounds,
        game={"ratio": ratio},
        agents_per_shard=20,
        name=name,
        seed=seed,
        n_agents=60,
        policy=LEVEL_K,
    )


@pytest.fixture(scope="module")
def two_runs_results_dir(education_spec, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A results folder with two real level-k runs, "alpha" (seed 1, ratio 2/3) then "beta"
    (seed 2, ratio 1/2), written by Simulation."""
    root = tmp_path_factory.mktemp("results")
    for name, seed, ratio in (("alpha", 1, 2 / 3), ("beta", 2, 0.5)):
        Simulation(_config(education_spec, name, seed, ratio)).run(out_dir=root, progress=False)
    return root


@pytest.fixture
def scratch_results_dir(two_runs_results_dir: Path, tmp_path: Path) -> Path:
    """A copy of the results folder that a test may damage."""
    return Path(shutil.copytree(two_runs_results_dir, tmp_path / "results"))


def _bundles(root: Path) -> dict[str, Bundle]:
    """{config name: bundle} of the folder's bundles."""
    opened = [Bundle.open(p) for p in sorted(root.iterdir()) if p.is_dir()]
    return {b.config.name: b for b in opened}


def _data(obj: hv.core.Dimensioned) -> list[pd.DataFrame]:
    """The data of every element in a plot object, in drawing order."""
    return [e.dframe() for e in obj.traverse(lambda x: x, [hv.Element])]


def _alerts(view) -> list[str]:
    """The texts of the Alert panes a view returned."""
    return [shown_text(p) for p in notices(view)]


def notices(view) -> list[pn.pane.Markdown]:
    """The notice panes (ui/notices.py) in a view."""
    panes = view.select(pn.pane.Markdown) if hasattr(view, "select") else []
    return [p for p in panes if "wb-notice" in (p.css_classes or [])]


def level(pane: pn.pane.Markdown) -> str:
    """A notice's level, from its CSS class."""
    (name,) = [c for c in pane.css_classes if c.startswith("wb-notice-")]
    return name.removeprefix("wb-notice-")


def test_the_picker_lists_the_bundles_with_their_status_model_and_size(
    two_runs_results_dir,
) -> None:
    explorer = ResultsExplorer(results_dir=str(two_runs_results_dir))
    table = explorer.bundles
    bundles = _bundles(two_runs_results_dir)
    assert list(table["run_id"]) == [bundles["alpha"].run_id, bundles["beta"].run_id]
    assert list(table["status"]) == ["complete", "complete"]
    assert list(table["model"]) == ["level_k (policy)"] * 2
    assert list(table["n_agents"]) == [60, 60] and list(table["rounds_done"]) == [2, 2]
    assert list(explorer.param.run_id.objects) == list(table["run_id"])
    assert explorer.run_id == bundles["beta"].run_id  # the newest is shown first
    assert explorer.param.by.objects == ["gender", "education"] and explorer.by == "education"
    assert explorer.param.round.objects == [1, 2] and explorer.round == 2
    assert explorer.damaged == {}


def test_model_label_names_the_model_the_policy_or_the_engine() -> None:
    assert model_label({"engine": "llama.cpp", "name": "SmolLM2-135M"}) == "SmolLM2-135M"
    assert model_label({"engine": "none", "policy": "level_k"}) == "level_k (policy)"
    assert model_label({"engine": "replay"}) == "replay" and model_label({}) == "?"


@pytest.mark.parametrize("kind", ["bars", "means"])
def test_a_chosen_bundle_and_group_by_give_viz_distribution(two_runs_results_dir, kind) -> None:
    bundles = _bundles(two_runs_results_dir)
    explorer = ResultsExplorer(results_dir=str(two_runs_results_dir))
    explorer.param.update(run_id=bundles["alpha"].run_id, by="gender", round=1, kind=kind)
    drawn = explorer.distribution_plot()
    expected = plots.distribution(bundles["alpha"], "gender", 1, kind)
    assert type(drawn) is type(expected)
    for got, want in zip(_data(drawn), _data(expected), strict=True):
        pd.testing.assert_frame_equal(got, want)
    assert any(len(frame) for frame in _data(drawn))
    view = explorer.distribution_view()
    assert isinstance(view, pn.pane.HoloViews)
    for got, want in zip(_data(view.object), _data(expected), strict=True):
        pd.testing.assert_frame_equal(got, want)


def test_histogram_and_trajectories_are_the_chosen_bundles(two_runs_results_dir) -> None:
    bundles = _bundles(two_runs_results_dir)
    explorer = ResultsExplorer(results_dir=str(two_runs_results_dir), trajectories_by_group=True)
    explorer.param.update(run_id=bundles["alpha"].run_id, round=1, by="education")
    for got, want in (
        (explorer.histogram_plot(), plots.histogram(bundles["alpha"], 1)),
        (explorer.trajectories_plot(), plots.trajectories(bundles["alpha"], "education")),
    ):
        for a, b in zip(_data(got), _data(want), strict=True):
            pd.testing.assert_frame_equal(a, b)


def test_compare_shows_only_the_config_keys_that_differ(two_runs_results_dir) -> None:
    bundles = _bundles(two_runs_results_dir)
    explorer = ResultsExplorer(results_dir=str(two_runs_results_dir))
    assert _alerts(explorer.compare_view()) == ["choose two or more bundles to compare"]
    alpha, beta = bundles["alpha"].run_id, bundles["beta"].run_id
    explorer.compared = [alpha, beta]
    differences = explorer.differences().set_index("key")
    assert set(differences.index) == {"name", "seed", "game.ratio"}
    assert differences.loc["game.ratio"].tolist() == ["2/3", "1/2"]  # as written
    assert differences.loc["seed"].tolist() == [1, 2]
    drawn = explorer.compare_plot()
    (bars,) = [e for e in drawn.traverse(lambda x: x, [hv.Bars])]
    means = {b.run_id: b.rounds()["mean"].iloc[-1] for b in bundles.values()}
    assert (
        dict(zip(bars.dimension_values("label"), bars.dimension_values("guess"), strict=True))
        == means
    )
    view = explorer.compare_view()
    (table,) = view.select(pn.pane.DataFrame)
    assert list(table.object["key"]) == list(differences.index)


def test_provenance_is_what_the_manifest_records(two_runs_results_dir) -> None:
    bundle = _bundles(two_runs_results_dir)["beta"]
    explorer = ResultsExplorer(results_dir=str(two_runs_results_dir))
    shown = explorer.provenance().set_index("key")["value"]
    assert shown["seeds.run"] == "2" and shown["model.policy"] == "level_k"
    assert shown["versions.pandas"] == bundle.manifest["versions"]["pandas"]
    assert shown["status"] == "complete" and "backend.kind" in shown.index


@pytest.mark.parametrize("name", ["responses", "rounds", "personas", "tidy"])
def test_downloads_are_the_bundles_tables(two_runs_results_dir, name) -> None:
    bundle = _bundles(two_runs_results_dir)["beta"]
    explorer = ResultsExplorer(results_dir=str(two_runs_results_dir), table=name)
    expected = tidy_table(bundle) if name == "tidy" else getattr(bundle, name)()
    parquet = pd.read_parquet(io.BytesIO(explorer.download("parquet").getvalue()))
    pd.testing.assert_frame_equal(parquet, expected)
    csv = pd.read_csv(io.BytesIO(explorer.download("csv").getvalue()))
    pd.testing.assert_frame_equal(csv, expected, check_dtype=False, check_categorical=False)


def test_the_download_buttons_send_the_tables_bytes(two_runs_results_dir) -> None:
    bundle = _bundles(two_runs_results_dir)["beta"]
    explorer = ResultsExplorer(
        results_dir=str(two_runs_results_dir), table="responses", view="Tables"
    )
    page = explorer.__panel__()
    downloads = {d.label: d for d in page.select(pn.widgets.FileDownload)}
    assert set(downloads) == {"CSV", "PARQUET"}
    parquet = downloads["PARQUET"]
    assert parquet.filename == f"{bundle.run_id}-responses.parquet" and not parquet.disabled
    parquet._clicks += 1  # what a click in the browser does
    data = base64.b64decode(parquet.data.split(",", 1)[1])
    pd.testing.assert_frame_equal(pd.read_parquet(io.BytesIO(data)), bundle.responses())
    explorer.table = "rounds"
    parquet._clicks += 1
    assert parquet.filename == f"{bundle.run_id}-rounds.parquet"
    data = base64.b64decode(parquet.data.split(",", 1)[1])
    pd.testing.assert_frame_equal(pd.read_parquet(io.BytesIO(data)), bundle.rounds())


def test_the_table_is_paged_remotely(two_runs_results_dir) -> None:
    explorer = ResultsExplorer(
        results_dir=str(two_runs_results_dir), page_size=10, table="responses", view="Tables"
    )
    page = explorer.__panel__()
    table = [t for t in page.select(pn.widgets.Tabulator) if "guess" in t.value.columns]
    (table,) = table
    assert table.pagination == "remote" and table.page_size == 10 and len(table.value) == 120
    model = table.get_root()
    assert len(model.source.data["guess"]) == 10  # one page reaches the browser
    explorer.page_size = 25
    assert table.page_size == 25


def test_verify_shows_ok_then_the_problem_of_a_tampered_rounds_file(scratch_results_dir) -> None:
    explorer = ResultsExplorer(results_dir=str(scratch_results_dir))
    report = asyncio.run(explorer.verify())
    assert report.ok and explorer.report is report
    assert [level(a) for a in notices(explorer.report_view())] == ["success"]
    rounds = Bundle.open(explorer.bundle().path).path / "rounds.parquet"
    table = pq.read_table(rounds).to_pandas()
    table.loc[0, "mean"] += 1.0
    table.to_parquet(rounds, index=False)
    report = asyncio.run(explorer.verify())
    assert not report.ok
    assert any(p.startswith("rounds.parquet") for p in report.problems), report.problems
    view = explorer.report_view()
    assert level(view) == "danger" and "rounds.parquet" in shown_text(view)


def test_an_empty_or_missing_folder_shows_a_message(tmp_path) -> None:
    explorer = ResultsExplorer(results_dir=str(tmp_path))
    assert explorer.bundles.empty and explorer.run_id is None
    (message,) = _alerts(explorer.status_view())
    assert "no bundles here yet" in message
    assert "no bundles here yet" in _alerts(explorer.histogram_view())[0]
    explorer.results_dir = str(tmp_path / "nowhere")
    assert "no such folder" in _alerts(explorer.status_view())[0]
    assert asyncio.run(explorer.verify()) is None
    explorer.__panel__().get_root()


def test_a_broken_bundle_shows_messages_never_a_traceback(scratch_results_dir) -> None:
    bundles = _bundles(scratch_results_dir)
    (scratch_results_dir / "junk").mkdir()
    (scratch_results_dir / "junk" / "manifest.json").write_text("{not json")
    beta = bundles["beta"].path
    (beta / "personas.parquet").unlink()
    (beta / "rounds.parquet").write_bytes(b"not parquet")
    explorer = ResultsExplorer(results_dir=str(scratch_results_dir))
    assert list(explorer.damaged) == ["junk"] and "invalid JSON" in explorer.damaged["junk"]
    assert any("junk: not readable" in a for a in _alerts(explorer.status_view()))
    assert explorer.run_id == bundles["beta"].run_id and explorer.by is None
    for view in (
        explorer.histogram_view,
        explorer.distribution_view,
        explorer.trajectories_view,
    ):
        (message,) = _alerts(view())
        assert "parquet" in message or "group by" in message, message
    explorer.table = "personas"
    assert "personas.parquet" in _alerts(explorer.table_message())[0]
    explorer.view = "Tables"
    page = explorer.__panel__()
    downloads = page.select(pn.widgets.FileDownload)
    assert len(downloads) == 2 and all(d.disabled for d in downloads)
    page.get_root()


def test_a_refresh_lists_a_new_run(
    two_runs_results_dir, scratch_results_dir, education_spec
) -> None:
    explorer = ResultsExplorer(results_dir=str(scratch_results_dir))
    Simulation(_config(education_spec, "gamma", 3, 0.5)).run(
        out_dir=scratch_results_dir, progress=False
    )
    assert len(explorer.bundles) == 2
    chosen = explorer.run_id
    explorer.refresh()
    assert len(explorer.bundles) == 3 and explorer.run_id == chosen  # the choice stays
    assert len(explorer.param.compared.objects) == 3


def test_the_page_builds_and_renders_every_tab_without_warnings(
    two_runs_results_dir, caplog
) -> None:
    explorer = ResultsExplorer(results_dir=str(two_runs_results_dir))
    explorer.compared = list(explorer.bundles["run_id"])
    page = explorer.__panel__()
    with caplog.at_level(logging.WARNING):
        root = page.get_root()
        (tabs,) = page.select(pn.Tabs)
        for index in range(1, len(tabs)):
            tabs.active = index
        explorer.param.update(kind="heatmap", by="gender")
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert root is not None


def test_a_run_still_going_says_so_until_its_first_round(education_spec, tmp_path) -> None:
    config = _config(education_spec, "live", 4, 0.5)
    with BundleWriter(tmp_path, config, run_id="live") as writer:
        writer.write_personas(sample_population(education_spec, config.n_agents, 4))
        explorer = ResultsExplorer(results_dir=str(tmp_path))
        assert list(explorer.bundles["status"]) == ["running"] and explorer.round is None
        assert _alerts(explorer.status_view()) == ["live is running"]
        for view in (explorer.histogram_view, explorer.distribution_view):
            assert _alerts(view()) == ["live: no finished round yet (running); refresh after one"]
        assert explorer.by == "education"  # the personas are there already
        explorer.__panel__().get_root()
        writer.close()  # given up unfinished: no process writes it any more
        assert _alerts(explorer.status_view()) == [
            "live is dead: its writer stopped before it finished; resume it with "
            f"workbench run --resume {tmp_path / 'live'}"
        ]


def test_a_drawn_explorer_picks_up_a_bundle_that_appears_later(
    two_runs_results_dir, tmp_path
) -> None:
    """Drawn, the picker follows new choices at once and reads the bundle table: refresh must
    set the table before the choices (the dashboard refreshes when a launch finishes)."""
    folder = tmp_path / "later"
    explorer = ResultsExplorer(results_dir=str(folder))
    pn.panel(explorer).get_root()  # drawn: the picker widget has a model from here on
    assert explorer.run_id is None
    first = sorted(p for p in two_runs_results_dir.iterdir() if p.is_dir())[0]
    shutil.copytree(first, folder / first.name)
    explorer.refresh()
    assert explorer.run_id == Bundle.open(folder / first.name).run_id


def test_refreshing_a_drawn_explorer_with_empty_choices_never_recurses(
    education_spec, tmp_path, caplog
) -> None:
    """Opening the Results tab refreshes the explorer. Over a folder without bundles, or with a
    bundle still before its first round, the Round (and Group by) selects have no choices; a
    refresh that re-announced the same bundle with `param.trigger` reached those selects, which
    set their value again inside the trigger, each time triggering themselves: Panel logged a
    RecursionError from Select."""
    empty = ResultsExplorer(results_dir=str(tmp_path / "empty"))
    pn.panel(empty).get_root()
    config = _config(education_spec, "live", 4, 0.5)
    with BundleWriter(tmp_path / "live", config, run_id="live") as writer:
        writer.write_personas(sample_population(education_spec, config.n_agents, 4))
        live = ResultsExplorer(results_dir=str(tmp_path / "live"))
        pn.panel(live).get_root()
        reads = live.reads
        with caplog.at_level(logging.WARNING):
            for explorer in (empty, live, empty, live):
                explorer.refresh()  # raised RecursionError before the fix
        assert live.run_id == "live" and live.round is None
        assert live.reads == reads  # nothing moved: the views are not drawn again
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def _draws(explorer: ResultsExplorer) -> dict[str, list[int]]:
    """How many times each tab's views were drawn so far."""
    return {tab: [v.draws for v in views] for tab, views in explorer._views.items()}


def test_only_the_views_shown_are_drawn_and_a_hidden_tab_once_per_bundle(
    two_runs_results_dir,
) -> None:
    bundles = _bundles(two_runs_results_dir)
    explorer = ResultsExplorer(results_dir=str(two_runs_results_dir), shown=False)
    assert _draws(explorer) == {
        "Plots": [0, 0, 0], "Exact": [0], "Compare": [0], "Provenance": [0], "Tables": [0]
    }  # fmt: skip
    explorer.shown = True  # the dashboard opened its tab: the Plots tab is drawn, only it
    assert _draws(explorer)["Plots"] == [1, 1, 1] and _draws(explorer)["Tables"] == [0]
    explorer.round = 1  # the histogram and the distribution depend on it, trajectories not
    assert _draws(explorer)["Plots"] == [2, 2, 1]
    explorer.view = "Tables"
    assert explorer._tabs.active == VIEWS.index("Tables") and _draws(explorer)["Tables"] == [1]
    explorer.param.update(round=2, kind="means")  # the hidden plots wait
    assert _draws(explorer)["Plots"] == [2, 2, 1]
    explorer._tabs.active = 0  # opened in the page: drawn before the tabs send it
    assert explorer.view == "Plots" and _draws(explorer)["Plots"] == [3, 3, 1]
    explorer.view = "Tables"
    explorer.view = "Plots"  # away and back, the same bundle: nothing is drawn again
    assert _draws(explorer)["Plots"] == [3, 3, 1] and _draws(explorer)["Tables"] == [1]
    explorer.refresh()  # nothing moved on disk: nothing drawn, the listing not set again
    listing = explorer.bundles
    explorer.refresh()
    assert explorer.bundles is listing and _draws(explorer)["Plots"] == [3, 3, 1]
    explorer.run_id = bundles["alpha"].run_id  # another bundle: the shown tab only
    assert _draws(explorer)["Plots"] == [4, 4, 2] and _draws(explorer)["Provenance"] == [0]
    explorer.shown = False  # the dashboard's other tabs: nothing is drawn
    explorer.run_id = bundles["beta"].run_id
    assert _draws(explorer)["Plots"] == [4, 4, 2]
    (table,) = [t for t in explorer._page.select(pn.widgets.Tabulator) if t is explorer._table]
    assert table.value.empty or "guess" not in table.value  # the hidden table is not read


def test_the_round_is_the_last_one_unless_an_earlier_one_was_picked(
    education_spec, tmp_path
) -> None:
    """Each bundle opens at its last round (the page showed round 1 of a finished run); a round
    the user picked is kept while the bundles chosen next played it."""
    for name, seed, rounds in (("two", 5, 2), ("three", 6, 3)):
        config = _config(education_spec, name, seed, 0.5, rounds)
        Simulation(config).run(out_dir=tmp_path, progress=False)
    explorer = ResultsExplorer(results_dir=str(tmp_path))
    two, three = explorer.bundles["run_id"]
    assert explorer.run_id == three and explorer.round == 3
    explorer.run_id = two
    assert explorer.round == 2  # the last, not the 3 it cannot have, nor round 1
    explorer.round = 1
    explorer.run_id = three
    assert explorer.round == 1  # picked, and played by this bundle too
    explorer.round = 3
    explorer.run_id = two
    assert explorer.round == 2


def test_a_live_run_read_again_follows_its_last_round(education_spec, tmp_path) -> None:
    config = _config(education_spec, "live", 4, 0.5)
    with BundleWriter(tmp_path, config, run_id="live") as writer:
        personas = sample_population(education_spec, config.n_agents, 4)
        writer.write_personas(personas)
        explorer = ResultsExplorer(results_dir=str(tmp_path), shown=False)  # the state only
        assert explorer.round is None
        for number in (1, 2):
            ids = personas["agent_id"].to_numpy()
            frame = pd.DataFrame({"agent_id": ids, "guess": 30.0 + number, "status": "ok"})
            writer.write_responses(number, 0, frame)
            writer.end_round({"round": number, "n": len(ids), "mean": 30.0, "seconds": 0.1})
            explorer.refresh()
            assert explorer.param.round.objects == list(range(1, number + 1))
            assert explorer.round == number  # not the first round it was shown at


def test_an_empty_folder_is_said_once_with_what_fills_it(tmp_path) -> None:
    explorer = ResultsExplorer(
        results_dir=str(tmp_path), hint="launch a run from the Run tab", view="Tables"
    )
    page = explorer.__panel__()
    texts = [shown_text(p) for p in notices(page)]
    assert texts == [f"{tmp_path}: no bundles here yet; launch a run from the Run tab"]
    assert not explorer._tabs.visible and not explorer._picker.visible
    assert all(v.draws == 0 for views in explorer._views.values() for v in views)


def test_the_exact_view_shows_each_group_and_each_gaps_verdict(exact_bundle) -> None:
    """A bundle kept with exact distributions: the groups' plot, their bands, and each gap in
    words; the numerics unmeasured, then measured (as Measure numerics keeps them: bench
    noise's largest shift, here set by hand; the browser test runs the real one); a bundle
    without them says how to keep them."""
    from workbench.ui.results_exact import numerics_key

    explorer = ResultsExplorer(results_dir=str(exact_bundle.path.parent), view="Exact")
    assert explorer.by == "occupation" and explorer.round == 1
    view = explorer.exact_view()
    tables = [t.value for t in view.select(pn.widgets.Tabulator)]
    groups, gaps = tables
    assert groups["occupation"].tolist() == ["engineer", "nurse", "teacher"]
    assert {"exact_mean", "band_low", "band_high", "sampled_mean", "in_band"} <= set(groups)
    assert len(gaps) == 3 and set(gaps["numerics"]) == {"not measured"}
    assert view.select(pn.pane.HoloViews)
    explorer.numerics = {numerics_key(explorer.run_id, "occupation"): 1.0}
    gaps = explorer.exact_frames()[1]
    assert gaps["numerics"].tolist() == ["beyond numerics", "beyond numerics", "within numerics"]
    text = " ".join(shown_text(p) for p in explorer.exact_view().select(pn.pane.Markdown))
    assert "the largest shift of a group's exact mean under another evaluation is 1.00" in text

    plain = ResultsExplorer(results_dir=str(exact_bundle.path.parent))
    plain.param.update(by="gender")  # another column: its own numerics, none measured yet
    assert set(plain.exact_frames()[1]["numerics"]) == {"not measured"}


def test_a_bundle_without_exact_distributions_says_how_to_keep_them(two_runs_results_dir):
    from workbench.ui.results_exact import KEEP_THEM

    explorer = ResultsExplorer(results_dir=str(two_runs_results_dir), view="Exact")
    (said,) = _alerts(explorer.exact_view())
    assert "kept no exact distributions" in said and "output.exact_distributions" in said
    assert KEEP_THEM.split("`")[0] in said
