"""The static figures hold the bundle's numbers: bars, boxes, means, lines and marks."""

from __future__ import annotations

import time

import matplotlib as mpl
import numpy as np
import pandas as pd
import pytest
from matplotlib.axes import Axes
from matplotlib.collections import QuadMesh
from matplotlib.container import BarContainer, ErrorbarContainer
from matplotlib.figure import Figure

from tests.viz.conftest import HAND_EDUCATION, LEVEL_K
from workbench.errors import ConfigError
from workbench.runtime import Simulation
from workbench.viz import figure_parts as fp
from workbench.viz import figures
from workbench.viz.distributions import (
    compare_bundles,
    group_summary,
    guess_counts,
    round_trajectories,
    tokens_per_response,
)


@pytest.fixture
def level_k_bundle(run_bundle):
    """A real two-round run of 300 level-k agents of the education population."""
    return run_bundle(policy=LEVEL_K, n_agents=300, rounds=2, agents_per_shard=100)


def _vline(ax: Axes, name: str) -> float:
    """The x of the vertical line whose legend label starts with `name`."""
    found = [line for line in ax.lines if line.get_label().startswith(name)]
    assert len(found) == 1, [line.get_label() for line in ax.lines]
    xs = found[0].get_xdata()
    assert xs[0] == xs[1]  # vertical
    return float(xs[0])


def _bars(ax: Axes) -> BarContainer:
    (container,) = [c for c in ax.containers if isinstance(c, BarContainer)]
    return container


def _errorbar(ax: Axes, label: str) -> ErrorbarContainer:
    (container,) = [
        c for c in ax.containers if isinstance(c, ErrorbarContainer) and c.get_label() == label
    ]
    return container


def _ytick_texts(ax: Axes) -> list[str]:
    return [t.get_text().replace("\n", " ") for t in ax.get_yticklabels()]


def test_histogram_bars_are_guess_counts_and_marks_the_round(level_k_bundle) -> None:
    fig = figures.histogram(level_k_bundle, round=1)
    assert isinstance(fig, Figure)
    (ax,) = fig.axes
    counts = guess_counts(level_k_bundle, round=1)
    bars = _bars(ax)
    assert [p.get_height() for p in bars] == list(counts["count"])
    assert [p.get_x() for p in bars] == list(counts["guess"])  # bin g starts at g
    assert {p.get_width() for p in bars} == {1.0}
    row = level_k_bundle.rounds().set_index("round").loc[1]
    assert _vline(ax, "target") == pytest.approx(row["target"])
    assert _vline(ax, "winning number") == pytest.approx(row["winning_guess"])
    assert _vline(ax, "equilibrium") == 0.0
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert f"target {row['target']:.2f}".rstrip("0").rstrip(".") in labels
    assert "equilibrium 0" in labels
    assert ax.get_xlabel().startswith("guess") and ax.get_ylabel() == "agents"
    assert ax.get_xlim() == (0.0, 101.0)
    assert fig.get_suptitle() == f"Round 1 guesses\n{level_k_bundle.run_id}"
    cell = "style-step_by_step__ratio-51_100__famous_game_note-true__seed-1-b86de72e"
    short = fp.short_run_id(cell)
    assert len(short) == fp.RUN_ID_WIDTH and short == f"{cell[:38]}…{cell[-17:]}"


def test_histogram_defaults_to_the_last_round(level_k_bundle) -> None:
    fig = figures.histogram(level_k_bundle)
    target = level_k_bundle.rounds().set_index("round").loc[2, "target"]
    assert _vline(fig.axes[0], "target") == pytest.approx(target)
    assert fig.get_suptitle().startswith("Round 2 guesses")


def test_bars_panels_are_each_categorys_shares(level_k_bundle) -> None:
    fig = figures.distribution(level_k_bundle, "education", kind="bars")
    counts = guess_counts(level_k_bundle, by="education")
    categories = list(counts["category"].cat.categories)
    assert len(fig.axes) == len(categories) == 5
    target = level_k_bundle.rounds().set_index("round").loc[2, "target"]
    for ax, category in zip(fig.axes, categories, strict=True):
        rows = counts[counts["category"] == category]
        bars = _bars(ax)
        assert [p.get_height() for p in bars] == pytest.approx(list(rows["share"]))
        assert [p.get_x() for p in bars] == list(rows["guess"])
        assert ax.get_title(loc="left") == f"{category} (n={rows['count'].sum()})"
        assert target in [line.get_xdata()[0] for line in ax.lines]  # marked in every panel
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any(t.startswith("target") for t in legend) and "equilibrium 0" in legend


def test_heatmap_cells_are_the_shares(hand_bundle) -> None:
    fig = figures.distribution(hand_bundle, "education", kind="heatmap")
    ax = fig.axes[0]
    (mesh,) = [c for c in ax.collections if isinstance(c, QuadMesh)]
    cells = np.ma.filled(mesh.get_array(), 0.0).reshape(4, 101)  # 4 categories x guesses 0..100
    expected = np.zeros((4, 101))
    expected[0, [10, 20, 40, 75]] = 0.25  # high school: four valid answers
    expected[2, 3] = 1.0  # master's: 3.0 and 3.9 share bin 3
    assert cells == pytest.approx(expected)
    assert mesh.get_array().mask[1].all()  # bachelor's: nobody, drawn white
    labels = _ytick_texts(ax)
    assert labels == [
        "high school (n=4)", "bachelor's degree (n=0)", "master's degree (n=2)",
        "doctoral degree (n=0)",
    ]  # fmt: skip
    assert _vline(ax, "target") == pytest.approx(hand_bundle.rounds()["target"].iloc[0])


def test_quantile_boxes_are_group_summarys_quantiles(hand_bundle) -> None:
    fig = figures.distribution(hand_bundle, "education", kind="quantiles")
    ax = fig.axes[0]
    summary = group_summary(hand_bundle, by="education").set_index("category")
    school = summary.loc["high school"]
    (box,) = [p for p in ax.patches if p.get_label() == "quartiles and median (box)"]
    xs = box.get_path().vertices[:, 0]
    assert (xs.min(), xs.max()) == (school["q1"], school["q3"]) == (17.5, 48.875)
    whiskers = [line for line in ax.lines if line.get_label() == "min to max (whiskers)"]
    assert list(whiskers[0].get_xdata()) == [school["q1"], school["min"]]
    medians = [line for line in ax.lines if set(line.get_xdata()) == {school["median"]}]
    assert medians  # the median line of high school's box, at 30
    (mean,) = [line for line in ax.lines if line.get_label() == "mean"]
    assert list(mean.get_xdata()) == [school["mean"]]
    notes = [t.get_text() for t in ax.texts]
    assert notes.count("no valid answers") == 2  # bachelor's (nobody) and doctoral (all invalid)
    assert _ytick_texts(ax) == [
        "high school (n=4, 1 invalid)", "bachelor's degree (n=0)", "master's degree (n=2)",
        "doctoral degree (n=0, 2 invalid)",
    ]  # fmt: skip


def test_means_are_group_summarys_with_intervals(level_k_bundle) -> None:
    fig = figures.distribution(level_k_bundle, "education", round=1, kind="means")
    ax = fig.axes[0]
    summary = group_summary(level_k_bundle, round=1, by="education")
    container = _errorbar(ax, "mean with 95% interval")
    line = container.lines[0]
    assert line.get_xdata() == pytest.approx(summary["mean"].to_numpy())
    assert list(line.get_ydata()) == list(range(5))
    segments = container.lines[2][0].get_segments()
    lows = [s[0][0] for s in segments]
    highs = [s[1][0] for s in segments]
    assert lows == pytest.approx(summary["ci_low"].to_numpy())
    assert highs == pytest.approx(summary["ci_high"].to_numpy())
    assert _ytick_texts(ax) == [
        f"{c} (n={n})" for c, n in zip(summary["category"], summary["n_valid"], strict=True)
    ]
    target = level_k_bundle.rounds().set_index("round").loc[1, "target"]
    assert _vline(ax, "target") == pytest.approx(target)


def test_reference_markers_share_rows_or_get_their_own(level_k_bundle) -> None:
    reference = pd.DataFrame(
        {
            "category": ["high school", "CEOs"],
            "mean": [32.5, 37.9],
            "low": [28.0, 29.1],
            "high": [37.0, 46.7],
            "label": "CHC 2004",
        }
    )
    fig = figures.distribution(level_k_bundle, "education", kind="means", reference=reference)
    ax = fig.axes[0]
    container = _errorbar(ax, "CHC 2004")  # labelled once; the second row is _nolegend_
    point = container.lines[0]
    assert list(point.get_xdata()) == [32.5]
    assert point.get_ydata()[0] == pytest.approx(1.28)  # just below high school's row (1)
    labels = _ytick_texts(ax)
    assert len(labels) == 6 and labels[-1] == "CEOs"  # a row of its own after the five
    others = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    ceos = [c for c in others if list(c.lines[0].get_xdata()) == [37.9]]
    assert ceos[0].lines[0].get_ydata()[0] == 5
    bars = figures.distribution(level_k_bundle, "education", kind="bars", reference=reference)
    school = bars.axes[1]
    assert 32.5 in [line.get_xdata()[0] for line in school.lines]  # its own category's panel
    assert all(37.9 in [line.get_xdata()[0] for line in ax.lines] for ax in bars.axes)


def test_trajectories_lines_are_round_trajectories(level_k_bundle) -> None:
    fig = figures.trajectories(level_k_bundle)
    (ax,) = fig.axes
    table = round_trajectories(level_k_bundle)
    for column, name in (("mean", "mean"), ("median", "median"), ("target", "target"),
                         ("winning_guess", "winning number")):  # fmt: skip
        (line,) = [line for line in ax.lines if line.get_label() == name]
        assert list(line.get_xdata()) == [1, 2]
        assert line.get_ydata() == pytest.approx(table[column].to_numpy()), name
    (eq,) = [line for line in ax.lines if line.get_label().startswith("equilibrium")]
    assert set(eq.get_ydata()) == {0.0}
    assert list(ax.get_xticks()) == [1, 2] and ax.get_xlabel() == "round"


def test_trajectories_by_group_and_reference(level_k_bundle) -> None:
    reference = pd.DataFrame({"round": [1, 2], "mean": [30.0, 20.0], "label": "paper"})
    fig = figures.trajectories(level_k_bundle, by="education", reference=reference)
    table = round_trajectories(level_k_bundle, by="education")
    assert [ax.get_title(loc="left") for ax in fig.axes] == [
        "mean",
        "median",
        "target",
        "winning number",
    ]
    for ax, column in zip(fig.axes, ("mean", "median", "target", "winning_guess"), strict=True):
        for category in HAND_EDUCATION[:1] + ("doctoral degree",):
            (line,) = [line for line in ax.lines if line.get_label() == category]
            rows = table[table["category"] == category]
            assert line.get_ydata() == pytest.approx(rows[column].to_numpy())
    (paper,) = [line for line in fig.axes[0].lines if line.get_label() == "paper (mean)"]
    assert list(paper.get_ydata()) == [30.0, 20.0]


def test_compare_rows_are_each_bundles_round(make_config, tmp_path) -> None:
    runs = {
        "p = 2/3": Simulation(make_config(policy=LEVEL_K, n_agents=200, rounds=2)).run(
            out_dir=tmp_path, progress=False
        ),
        "p = 1/2": Simulation(
            make_config(policy=LEVEL_K, n_agents=200, rounds=1, game={"ratio": 0.5})
        ).run(out_dir=tmp_path, progress=False),
    }
    reference = pd.DataFrame({"label": ["p = 1/2", "Qwen2-72B"], "mean": [20.0, 19.15]})
    fig = figures.compare(runs, reference=reference)
    ax, trend = fig.axes
    means = _errorbar(ax, "mean with 95% interval").lines[0]
    summaries = [group_summary(b) for b in runs.values()]
    assert means.get_xdata() == pytest.approx([s["mean"].iloc[0] for s in summaries])
    table = compare_bundles(list(runs.values()), list(runs)).set_index(["label", "round"])
    expected = [table.loc[("p = 2/3", 2), "target"], table.loc[("p = 1/2", 1), "target"]]
    (target,) = [line for line in ax.lines if line.get_label() == "target"]
    assert target.get_xdata() == pytest.approx(expected)  # each bundle's last round
    assert _ytick_texts(ax) == ["p = 2/3 (round 2)", "p = 1/2 (round 1)", "Qwen2-72B"]
    (two_thirds,) = [line for line in trend.lines if line.get_label() == "p = 2/3"]
    assert two_thirds.get_ydata() == pytest.approx(runs["p = 2/3"].rounds()["mean"].to_numpy())
    with pytest.raises(ValueError, match=r"no round 2; rounds: \[1\]"):
        figures.compare(runs, round=2)
    sourced = reference.assign(source=["human pool", "paper"])
    legend = figures.compare(runs, reference=sourced).legends[0]
    assert {"human pool", "paper"} <= {text.get_text() for text in legend.get_texts()}


def test_compare_labels_a_list_by_run_id(level_k_bundle) -> None:
    labels = figures.labelled([level_k_bundle, level_k_bundle.path])
    assert list(labels) == [level_k_bundle.run_id, f"{level_k_bundle.run_id}#2"]
    fig = figures.compare([level_k_bundle, level_k_bundle.path])
    assert _ytick_texts(fig.axes[0])[1] == f"{level_k_bundle.run_id}#2 (round 2)"


def test_tokens_bars_are_tokens_per_response(hand_bundle, level_k_bundle) -> None:
    fig = figures.tokens({"hand": hand_bundle, "level-k": level_k_bundle})
    completion, prompt = fig.axes
    hand, level = tokens_per_response(hand_bundle), tokens_per_response(level_k_bundle)
    by_round = {
        c.get_label(): [p.get_width() for p in c]
        for c in completion.containers if isinstance(c, BarContainer)
    }  # fmt: skip
    assert by_round["round 1"] == pytest.approx([hand["completion_tokens_mean"][0], 0.0])
    assert by_round["round 2"] == [0.0]  # only the level-k bundle played round 2
    widths = [p.get_width() for c in prompt.containers for p in c]
    assert widths[0] == hand["prompt_tokens_mean"][0] == 30
    assert level["completion_tokens_total"].sum() == 0
    assert _ytick_texts(completion) == ["hand", "level-k"]


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda b: figures.distribution(b, "city"), ConfigError, r"no persona column 'city'"),
        (lambda b: figures.distribution(b, "education", kind="violin"), ValueError,
         r"kind: 'violin' is not one of bars, heatmap, quantiles, means"),
        (lambda b: figures.distribution(b, "education", round=3), ValueError,
         r"no round 3; rounds: \[1\]"),
        (lambda b: figures.histogram(b, round=0), ValueError, r"no round 0; rounds: \[1\]"),
        (lambda b: figures.trajectories(b, by="city"), ConfigError, r"no persona column"),
        (lambda b: figures.distribution(b, "education", kind="means",
                                        reference=pd.DataFrame({"group": ["x"], "mean": [1]})),
         ValueError, r"reference: missing column\(s\) \['category'\]"),
        (lambda b: figures.distribution(b, "education", reference=[("x", 1)]), ValueError,
         r"reference: expected a pandas DataFrame"),
        (lambda b: figures.trajectories(b, reference=pd.DataFrame({"round": [1],
                                                                   "mean": ["high"]})),
         ValueError, r"reference: column 'mean' must hold numbers"),
        (lambda b: figures.compare([]), ValueError, r"bundles: give one or more bundles"),
    ],
)  # fmt: skip
def test_bad_input_says_what_is_wrong(hand_bundle, call, error, match) -> None:
    with pytest.raises(error, match=match):
        call(hand_bundle)


def test_too_many_panels_points_to_the_heatmap(make_config, tmp_path) -> None:
    from workbench.results import BundleWriter

    config = make_config(n_agents=30, rounds=1)
    personas = pd.DataFrame({"agent_id": range(30), "city": [f"city {i}" for i in range(30)]})
    responses = pd.DataFrame({"agent_id": range(30), "guess": 10.0, "status": "ok"})
    with BundleWriter(tmp_path, config, run_id="cities") as writer:
        writer.write_personas(personas)
        writer.write_responses(1, 0, responses)
        from workbench.game import round_stats

        stats = round_stats(responses["guess"].to_numpy(), np.ones(30, bool), config.game)
        writer.end_round({"round": 1, **stats.as_dict(), "seconds": 0.0})
        writer.finish()
    bundle = tmp_path / "cities"
    with pytest.raises(ValueError, match=r"'city' has 30 \(more than 20\); use kind='heatmap'"):
        figures.distribution(bundle, "city")
    heat = figures.distribution(bundle, "city", kind="heatmap")
    assert len(_ytick_texts(heat.axes[0])) == 30


def test_figures_leave_no_global_state(hand_bundle) -> None:
    import matplotlib.pyplot as plt

    before = dict(mpl.rcParams)
    open_figures = plt.get_fignums()
    fig = figures.distribution(hand_bundle, "education", kind="means")
    assert plt.get_fignums() == open_figures  # never registered with pyplot
    assert dict(mpl.rcParams) == before  # the style is scoped to the figure
    png = fig._repr_png_()
    assert png.startswith(b"\x89PNG") and dict(mpl.rcParams) == before
    with mpl.rc_context({"font.size": 30, "axes.grid": False}):  # a session's own style
        again = figures.distribution(hand_bundle, "education", kind="means")._repr_png_()
    assert again == png


@pytest.mark.slow
def test_distribution_by_education_at_a_million_agents(million_bundle) -> None:
    """Benchmark (printed, not asserted): each kind of distribution by education over 1M."""
    bundle = million_bundle
    for kind in figures.KINDS:
        start = time.perf_counter()
        fig = figures.distribution(bundle, "education", kind=kind)
        seconds = time.perf_counter() - start
        print(f"\ndistribution(by='education', kind={kind!r}) over 1,000,000 agents: "
              f"{seconds:.2f} s (target < 2 s)")  # fmt: skip
        assert isinstance(fig, Figure)


def test_scale_lines_are_the_seconds_measured_and_the_references() -> None:
    seconds = pd.DataFrame({"local": [1.0, 1.2], "ray": [1.1, 1.3]}, index=[1_000, 10_000])
    peers = pd.DataFrame(
        {"system": ["agentscope"] * 2, "agents": [1_000, 10_000], "round_seconds": [5.0, 45.0]}
    )
    fig = figures.scale(seconds, peers, paper_seconds=40.0, latency=1.0)
    lines = {line.get_label(): line for line in fig.axes[0].get_lines()}
    assert list(lines["this run: ray"].get_ydata()) == [1.1, 1.3]
    assert list(lines["2 cores: agentscope"].get_ydata()) == [5.0, 45.0]
    assert list(lines["each agent's wait, 1 s"].get_ydata()) == [1.0, 1.0]
    with pytest.raises(ValueError, match="one row per agent count"):
        figures.scale(pd.DataFrame())
