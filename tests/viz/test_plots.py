"""The interactive plots hold the viz tables' numbers and render to bokeh, on real bundles."""

from __future__ import annotations

import logging

import holoviews as hv
import numpy as np
import pandas as pd
import pytest

from tests.viz.conftest import LEVEL_K
from workbench.config import RunConfig
from workbench.errors import ConfigError
from workbench.runtime import Simulation
from workbench.viz import agents_view, plots
from workbench.viz.distributions import (
    compare_bundles,
    group_summary,
    guess_counts,
    round_trajectories,
    tokens_per_response,
)

EDUCATION = ("elementary school", "high school", "bachelor's degree", "master's degree",
             "doctoral degree")  # fmt: skip
REFERENCE = pd.DataFrame(
    {
        "category": ["high school", "Caltech students"],
        "mean": [32.5, 23.0],
        "low": [27.5, 19.6],
        "high": [37.5, 26.4],
        "label": ["CHC 2004", "CHC 2004"],
    }
)


def _elements(obj: hv.core.Dimensioned, kind: type) -> list:
    """The elements of type `kind` inside a plot object, in drawing order."""
    return [e for e in obj.traverse(lambda x: x, [kind])]


def _markers(obj) -> dict[str, float]:
    """{label: x} of the plot's marker lines (VLines with hover and legend, or plain VLine)."""
    lines = {v.label: float(v.dimension_values(0)[0]) for v in _elements(obj, hv.VLines)}
    return lines | {v.label: float(v.data) for v in _elements(obj, hv.VLine)}


def _rendered(obj, caplog) -> object:
    """The bokeh model of `obj`; no HoloViews warning on the way (they are logged, not raised)."""
    with caplog.at_level(logging.WARNING):
        model = hv.render(obj, backend="bokeh")
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    return model


@pytest.fixture
def level_k_bundle(run_bundle):
    """A two-round level-k run of 400 agents over the paper's education population."""
    return run_bundle(policy=LEVEL_K, n_agents=400, rounds=2)


def test_histogram_bars_are_guess_counts_and_the_markers_the_rounds(level_k_bundle, caplog) -> None:
    plot = plots.histogram(level_k_bundle, round=1)
    (bars,) = _elements(plot, hv.Histogram)
    counts = guess_counts(level_k_bundle, round=1).set_index("guess")["count"]
    drawn = pd.Series(bars.dimension_values("count"), index=bars.edges[:-1].astype(int))
    assert drawn[drawn > 0].astype(int).to_dict() == counts.to_dict()
    assert bars.edges[0] == 0 and bars.edges[-1] == 101  # every whole number 0..100 has a bin
    row = level_k_bundle.rounds().set_index("round").loc[1]
    assert _markers(plot) == pytest.approx(
        {"target": row["target"], "equilibrium": 0.0, "winning guess": row["winning_guess"]}
    )
    figure = _rendered(plot, caplog)
    assert "round 1, 400 valid of 400" in figure.title.text
    assert [item.label.value for item in figure.legend[0].items] == [
        "target", "equilibrium", "winning guess"
    ]  # fmt: skip


def test_hand_bundle_histogram_is_exact(hand_bundle) -> None:
    (bars,) = _elements(plots.histogram(hand_bundle), hv.Histogram)
    counts = dict(zip(bars.edges[:-1].astype(int), bars.dimension_values("count"), strict=True))
    assert {g: c for g, c in counts.items() if c} == {3: 2, 10: 1, 20: 1, 40: 1, 75: 1}


def test_distribution_bars_are_each_groups_shares(level_k_bundle, caplog) -> None:
    plot = plots.distribution(level_k_bundle, "education", kind="bars", reference=REFERENCE)
    assert isinstance(plot, hv.NdLayout) and list(plot.keys()) == list(EDUCATION)
    counts = guess_counts(level_k_bundle, by="education")
    target = level_k_bundle.rounds()["target"].iloc[-1]
    for category in EDUCATION:
        (bars,) = _elements(plot[category], hv.Histogram)
        mine = counts[counts["category"] == category].set_index("guess")
        drawn = pd.Series(bars.dimension_values("share"), index=bars.edges[:-1].astype(int))
        assert drawn[drawn > 0].to_numpy() == pytest.approx(mine["share"].to_numpy())
        assert bars.dimension_values("count").sum() == mine["count"].sum()
        expected = {"target": target} | ({"CHC 2004": 32.5} if category == "high school" else {})
        assert _markers(plot[category]) == pytest.approx(expected)
    _rendered(plot, caplog)


def test_heatmap_cells_are_guess_counts(hand_bundle, caplog) -> None:
    plot = plots.distribution(hand_bundle, "education", kind="heatmap")
    (cells,) = _elements(plot, hv.Rectangles)
    drawn = cells.dframe().sort_values(["y0", "x0"], ascending=[False, True])
    counts = guess_counts(hand_bundle, by="education")
    assert list(drawn["count"]) == list(counts["count"])
    assert list(drawn["share"]) == pytest.approx(list(counts["share"]))
    # four categories: high school on top (3), the empty bachelor's row, master's at 1
    assert set(drawn.loc[drawn["category"] == "high school", "y0"]) == {2.5}
    assert set(drawn.loc[drawn["category"] == "master's degree", "y0"]) == {0.5}
    assert list(drawn["x1"] - drawn["x0"]) == [1.0] * len(drawn)
    figure = _rendered(plot, caplog)
    assert figure.yaxis[0].major_label_overrides == {
        3: "high school", 2: "bachelor's degree", 1: "master's degree", 0: "doctoral degree"
    }  # fmt: skip
    quads = figure.renderers[0].data_source.data  # what bokeh draws: cell g spans [g, g + 1)
    assert list(zip(quads["left"], quads["right"], quads["bottom"], quads["top"], strict=True)) == [
        (10, 11, 2.5, 3.5), (20, 21, 2.5, 3.5), (40, 41, 2.5, 3.5), (75, 76, 2.5, 3.5),
        (3, 4, 0.5, 1.5),
    ]  # fmt: skip


def test_quantile_boxes_are_group_summarys_quantiles(hand_bundle, caplog) -> None:
    plot = plots.distribution(hand_bundle, "education", kind="quantiles")
    (boxes,) = _elements(plot, hv.Rectangles)
    box = boxes.dframe().set_index("category")
    assert list(box.index) == ["high school", "master's degree"]  # no glyph for empty groups
    school = box.loc["high school"]
    assert (school["q1"], school["median"], school["q3"]) == (17.5, 30.0, 48.875)
    assert (school["min"], school["max"], school["n"], school["n_valid"]) == (10, 75.5, 5, 4)
    low, high, median = (s.dframe() for s in _elements(plot, hv.Segments))
    assert low[["min", "q1"]].to_numpy() == pytest.approx(np.array([[10.0, 17.5], [3.0, 3.225]]))
    assert high[["q3", "max"]].to_numpy() == pytest.approx(np.array([[48.875, 75.5], [3.675, 3.9]]))
    assert median[["median", "median_end"]].to_numpy() == pytest.approx(
        np.array([[30, 30], [3.45, 3.45]])
    )
    assert _markers(plot) == pytest.approx({"target": hand_bundle.rounds()["target"].iloc[0]})
    figure = _rendered(plot, caplog)
    drawn = next(r.data_source.data for r in figure.renderers if type(r.glyph).__name__ == "Quad")
    assert list(zip(drawn["left"], drawn["right"], drawn["bottom"], drawn["top"], strict=True)) == [
        pytest.approx((17.5, 48.875, 2.7, 3.3)),
        pytest.approx((3.225, 3.675, 0.7, 1.3)),
    ]  # the boxes span q1..q3 on their category's row


def test_means_and_intervals_are_group_summarys(level_k_bundle, caplog) -> None:
    plot = plots.distribution(
        level_k_bundle, "education", round=1, kind="means", reference=REFERENCE
    )
    summary = group_summary(level_k_bundle, round=1, by="education").set_index("category")
    means = next(s for s in _elements(plot, hv.Scatter) if s.label == "group mean")
    drawn = means.dframe().set_index("category")
    assert drawn["mean"].to_numpy() == pytest.approx(summary["mean"].to_numpy())
    errors = _elements(plot, hv.ErrorBars)[0].dframe()
    assert (errors["mean"] - errors["neg"]).to_numpy() == pytest.approx(summary["ci_low"])
    assert (errors["mean"] + errors["pos"]).to_numpy() == pytest.approx(summary["ci_high"])
    assert _markers(plot)["target"] == pytest.approx(level_k_bundle.rounds()["target"].iloc[0])
    reference = next(s for s in _elements(plot, hv.Scatter) if s.label == "CHC 2004")
    at = dict(
        zip(
            reference.dimension_values("category"),
            reference.dimension_values("position"),
            strict=True,
        )
    )
    assert at == {"high school": 4.0, "Caltech students": 0.0}  # a human group below the five
    assert drawn.loc["high school", "position"] == 4.0
    figure = _rendered(plot, caplog)
    assert figure.yaxis[0].major_label_overrides[0] == "Caltech students"


def test_trajectories_are_round_trajectories(run_bundle, education_spec, tmp_path, caplog) -> None:
    bundle = run_bundle(policy=LEVEL_K, n_agents=300, rounds=3)
    reference = pd.DataFrame({"round": [1, 3], "mean": [35.0, 20.0], "label": "paper"})
    plot = plots.trajectories(bundle, reference=reference)
    curves = {c.label: c.dimension_values("guess") for c in _elements(plot, hv.Curve)}
    table = round_trajectories(bundle)
    shown = {"mean": "mean", "median": "median", "winning_guess": "winning guess"}
    for column, label in (shown | {"target": "target"}).items():
        assert curves[label] == pytest.approx(table[column].to_numpy()), label
    assert _elements(plot, hv.Scatter)[-1].label == "paper"
    _rendered(plot, caplog)
    grouped = RunConfig(
        name="groups",
        seed=5,
        n_agents=300,
        population=education_spec,
        policy=LEVEL_K,
        game={"rounds": 2, "group_by": "education"},
    )
    played = Simulation(grouped).run(out_dir=tmp_path / "g", progress=False)
    by = plots.trajectories(played, by="education")
    curves = {c.label: c.dimension_values("guess") for c in _elements(by, hv.Curve)}
    table = round_trajectories(played, by="education")
    school = table[table["category"] == "high school"]
    assert curves["high school"] == pytest.approx(school["mean"].to_numpy())
    assert curves["high school target"] == pytest.approx(school["target"].to_numpy())
    plain = {c.label for c in _elements(plots.trajectories(bundle, by="gender"), hv.Curve)}
    assert plain == {"female", "male", "target"}  # not scored by gender: the population's target


def test_compare_and_tokens_hold_the_tables_numbers(run_bundle, hand_bundle, caplog) -> None:
    first = run_bundle(policy=LEVEL_K, n_agents=200, rounds=2, name="levelk")
    second = run_bundle(policy={"kind": "random"}, n_agents=200, rounds=1, name="random")
    reference = pd.DataFrame({"label": ["level-k", "paper"], "mean": [30.0, 40.0]})
    plot = plots.compare({"level-k": first, "random": second}, reference=reference)
    (bars,) = _elements(plot, hv.Bars)
    table = compare_bundles([first, second], ["level-k", "random"])
    last = table[table["round"] == table.groupby("label")["round"].transform("max")]
    assert list(bars.dimension_values("label")) == ["level-k", "random"]
    assert bars.dimension_values("guess") == pytest.approx(last["mean"].to_numpy())
    assert list(bars.dimension_values("round")) == [2, 1]  # each bundle's last round
    _rendered(plot, caplog)
    with pytest.raises(ConfigError, match=r"bundles \['random'\] have no round 2"):
        plots.compare({"level-k": first, "random": second}, round=2)
    (counted,) = _elements(plots.tokens({"hand": hand_bundle, "random": second}), hv.Bars)
    assert counted.dimension_values("completion_tokens_mean") == pytest.approx([4.5, 0.0])
    assert counted.dimension_values("n_counted").tolist() == [8, 200]
    several = plots.tokens([first])  # two rounds: one bar per round
    assert several.kdims == ["label", "round"] and len(several) == 2
    assert several.dimension_values("completion_tokens_mean") == pytest.approx(
        tokens_per_response(first)["completion_tokens_mean"].to_numpy()
    )
    _rendered(several, caplog)


def test_agents_are_points_below_the_threshold_and_rasterized_past_it(
    level_k_bundle, monkeypatch, caplog
) -> None:
    plot = plots.agents(level_k_bundle, "previous_guess", "guess")
    (points,) = _elements(plot, hv.Points)
    answers = level_k_bundle.responses(2).set_index("agent_id")["guess"]
    before = level_k_bundle.responses(1).set_index("agent_id")["guess"]
    ids = points.dimension_values("agent_id")
    assert len(ids) == 400
    assert points.dimension_values("guess") == pytest.approx(answers.loc[ids].to_numpy())
    assert points.dimension_values("previous_guess") == pytest.approx(before.loc[ids].to_numpy())
    assert [h.data for h in _elements(plot, hv.HLine)] == pytest.approx(
        [level_k_bundle.rounds()["target"].iloc[1]]
    )
    _rendered(plot, caplog)
    monkeypatch.setattr(agents_view, "RASTERIZE_ABOVE", 399)
    raster = plots.agents(level_k_bundle, "previous_guess", "guess")
    assert isinstance(raster, hv.DynamicMap) and not _elements(raster, hv.Points)
    figure = _rendered(raster, caplog)
    assert "400 agents (rasterized)" in figure.title.text
    assert "Image" in [type(getattr(r, "glyph", r)).__name__ for r in figure.renderers]
    (image,) = _elements(raster[()], hv.Image)
    assert np.nansum(image.dimension_values(2)) == 400  # every agent counted once
    monkeypatch.setattr(agents_view, "RASTERIZE_ABOVE", 400)
    assert _elements(plots.agents(level_k_bundle, "previous_guess", "guess"), hv.Points)


def test_bad_inputs_name_the_field_and_the_fix(level_k_bundle, hand_bundle) -> None:
    with pytest.raises(ConfigError, match=r"kind: 'violin' .* \['bars', 'heatmap', 'quantiles'"):
        plots.distribution(level_k_bundle, "education", kind="violin")
    with pytest.raises(ConfigError, match=r"by: no persona column 'city'"):
        plots.distribution(level_k_bundle, "city")
    with pytest.raises(ValueError, match=r"no round 5; rounds: \[1, 2\]"):
        plots.histogram(level_k_bundle, round=5)
    with pytest.raises(ConfigError, match=r"reference: a DataFrame with columns \['category'"):
        plots.distribution(level_k_bundle, "education", reference=pd.DataFrame({"mean": [1.0]}))
    with pytest.raises(ConfigError, match=r"'education' is not a numeric column; a category"):
        plots.agents(level_k_bundle, "education", "guess")
    with pytest.raises(ConfigError, match=r"'age' is not a numeric column; columns: \['guess'"):
        plots.agents(level_k_bundle, "age", "guess")
    with pytest.raises(ConfigError, match=r"previous_guess needs a round before round 1"):
        plots.agents(level_k_bundle, "previous_guess", "guess", round=1)
    with pytest.raises(ConfigError, match=r"bundles: give one or more"):
        plots.compare({})


def test_the_matplotlib_backend_gets_the_same_labels(level_k_bundle) -> None:
    """With matplotlib loaded too (as save_figure renders HoloViews objects), the plots carry
    their titles and category ticks there as well."""
    import holoviews.plotting.mpl  # noqa: F401

    plot = plots.distribution(level_k_bundle, "education", kind="quantiles")
    figure = hv.render(plot, backend="matplotlib")
    (axes,) = figure.axes
    assert [t.get_text() for t in axes.get_yticklabels()] == list(EDUCATION)
    assert axes.get_title().endswith("(quartiles, median, min-max, mean)")
    for built in (
        plots.histogram(level_k_bundle),
        plots.trajectories(level_k_bundle, by="education"),
    ):
        assert hv.render(built, backend="matplotlib").axes
    np.testing.assert_equal(len(figure.axes), 1)
