"""Distributions by persona column, trajectories, tokens and comparisons, on real bundles."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest

from tests.viz.conftest import LEVEL_K
from workbench.config import RunConfig
from workbench.errors import ConfigError
from workbench.runtime import Simulation
from workbench.viz.distributions import (
    compare_bundles,
    group_summary,
    guess_counts,
    round_trajectories,
    tokens_per_response,
)


def _joined(bundle, round_number: int) -> pd.DataFrame:
    """The round's valid answers with their personas, straight from pandas."""
    answers = bundle.responses(round_number).merge(bundle.personas(), on="agent_id")
    return answers[answers["status"] == "ok"]


@pytest.mark.parametrize("by", ["education", "gender"])
def test_category_means_are_the_bundles(run_bundle, by: str) -> None:
    bundle = run_bundle(policy=LEVEL_K, n_agents=400, rounds=2)
    summary = group_summary(bundle, by=by).set_index("category")
    direct = _joined(bundle, 2).groupby(by, observed=True)["guess"]
    pd.testing.assert_series_equal(
        summary["mean"], direct.mean(), check_names=False, check_index_type=False
    )
    pd.testing.assert_series_equal(
        summary["median"], direct.median(), check_names=False, check_index_type=False
    )
    assert summary.attrs["round"] == 2 and (summary["ci_low"] < summary["mean"]).all()


def test_the_whole_population_is_rounds_parquet(run_bundle) -> None:
    bundle = run_bundle(policy={"kind": "random"}, n_agents=300, rounds=1)
    summary = group_summary(bundle, round=1)
    rounds = bundle.rounds().iloc[0]
    assert list(summary["category"]) == ["all"] and summary["n"][0] == rounds["n"]
    for name in ("n_valid", "mean", "median", "std"):
        assert summary[name][0] == pytest.approx(rounds[name]), name


def test_counts_sum_to_the_valid_answers(run_bundle) -> None:
    bundle = run_bundle(policy=LEVEL_K, n_agents=500, rounds=1)
    counts = guess_counts(bundle, by="education")
    summary = group_summary(bundle, by="education").set_index("category")
    per_category = counts.groupby("category", observed=False)["count"].sum()
    assert (per_category == summary["n_valid"]).all()
    assert counts["count"].sum() == bundle.rounds()["n_valid"].iloc[0]
    assert counts.groupby("category", observed=True)["share"].sum().to_numpy() == pytest.approx(1)
    floors = np.floor(_joined(bundle, 1)["guess"]).astype(int).value_counts()
    assert counts.groupby("guess")["count"].sum().sort_index().equals(floors.sort_index())


def test_hand_made_bundle_exact(hand_bundle) -> None:
    summary = group_summary(hand_bundle, by="education").set_index("category")
    assert list(summary.index) == [
        "high school", "bachelor's degree", "master's degree", "doctoral degree"
    ]  # fmt: skip
    school = summary.loc["high school"]
    assert (school["n"], school["n_valid"]) == (5, 4)  # the out_of_range answer is left out
    assert (school["q1"], school["median"], school["q3"]) == (17.5, 30.0, 48.875)
    assert school["mean"] == pytest.approx((10 + 20 + 40 + 75.5) / 4)
    for empty, n in (("bachelor's degree", 0), ("doctoral degree", 2)):
        assert summary.loc[empty, "n"] == n and summary.loc[empty, "n_valid"] == 0
        assert summary.loc[empty, ["mean", "median", "ci_low"]].isna().all()
    counts = guess_counts(hand_bundle, by="education")
    masters = counts[counts["category"] == "master's degree"]
    assert list(masters["guess"]) == [3] and list(masters["count"]) == [2]  # 3.0 and 3.9: bin 3


def test_unknown_column_names_the_known_ones(hand_bundle) -> None:
    with pytest.raises(ConfigError, match=r"no persona column 'city'; columns: \['education'\]"):
        group_summary(hand_bundle, by="city")
    with pytest.raises(ValueError, match=r"no round 3; rounds: \[1\]"):
        guess_counts(hand_bundle, round=3)


def test_group_trajectories_are_groups_parquet(education_spec, tmp_path) -> None:
    config = RunConfig(
        name="groups",
        seed=5,
        n_agents=300,
        population=education_spec,
        policy=LEVEL_K,
        game={"rounds": 3, "group_by": "education", "offset": 5, "ratio": 0.5},
    )
    bundle = Simulation(config).run(out_dir=tmp_path, progress=False)
    mine = round_trajectories(bundle, by="education")
    theirs = bundle.groups().rename(columns={"group": "category"})
    merged = mine.merge(theirs, on=["round", "category"], suffixes=("", "_bundle"))
    assert len(merged) == len(mine) == 15
    for name in ("n", "n_valid", "mean", "median", "target", "winning_guess", "n_winners"):
        assert merged[name].to_numpy() == pytest.approx(merged[f"{name}_bundle"].to_numpy()), name
    overall = round_trajectories(bundle)
    assert list(overall["round"]) == [1, 2, 3] and set(overall["category"]) == {"all"}
    assert overall["target"].to_numpy() == pytest.approx(bundle.rounds()["target"].to_numpy())


def test_tokens_per_response(hand_bundle, run_bundle) -> None:
    row = tokens_per_response(hand_bundle).iloc[0]
    assert (row["n"], row["n_counted"]) == (9, 8)  # the timeout has no counts
    assert (row["prompt_tokens_mean"], row["prompt_tokens_total"]) == (30, 240)
    assert row["completion_tokens_mean"] == 4.5 and row["completion_tokens_median"] == 4.5
    assert (row["completion_tokens_max"], row["completion_tokens_total"]) == (8, 36)
    tokens = tokens_per_response(run_bundle(policy={"kind": "random"}, n_agents=20, rounds=2))
    assert list(tokens["round"]) == [1, 2] and list(tokens["n"]) == [20, 20]
    assert (tokens["completion_tokens_total"] == 0).all()  # a behavioural policy spends none


def test_compare_bundles_lines_up_rounds(make_config, tmp_path) -> None:
    runs = [
        Simulation(make_config(policy=policy, n_agents=60, rounds=3, name=name)).run(
            out_dir=tmp_path, progress=False
        )
        for name, policy in (("rand", {"kind": "random"}), ("levelk", LEVEL_K))
    ]
    table = compare_bundles(runs, labels=["random", "level-k"])
    assert list(table.columns[:2]) == ["label", "round"]
    assert table.groupby("label")["round"].apply(list).to_dict() == {
        "random": [1, 2, 3], "level-k": [1, 2, 3]
    }  # fmt: skip
    for label, bundle in zip(["random", "level-k"], runs, strict=True):
        mine = table[table["label"] == label]["mean"].to_numpy()
        assert mine == pytest.approx(bundle.rounds()["mean"].to_numpy())
    assert set(compare_bundles(runs)["label"]) == {b.run_id for b in runs}
    with pytest.raises(ValueError, match="labels must be unique"):
        compare_bundles(runs, labels=["a", "a"])
    with pytest.raises(ValueError, match="1 labels for 2 bundles"):
        compare_bundles(runs, labels=["a"])


@pytest.mark.slow
def test_group_summary_at_a_million_agents(million_bundle) -> None:
    """Benchmark (printed, not asserted): group_summary by education over 1M agents."""
    bundle = million_bundle
    start = time.perf_counter()
    summary = group_summary(bundle, by="education")
    seconds = time.perf_counter() - start
    print(f"\ngroup_summary(by='education') over 1,000,000 agents: {seconds:.2f} s (target < 2 s)")
    assert summary["n_valid"].sum() == 1_000_000


def test_the_hand_bundle_verifies(hand_bundle) -> None:
    from workbench.results import verify_bundle

    assert verify_bundle(hand_bundle.path).ok


def test_pair_counts_agree_with_unique_over_pairs_for_small_and_huge_spans() -> None:
    from workbench.viz.distributions import _pair_counts

    rng = np.random.default_rng(3)
    for high in (101, 10**9):  # bincount, then np.unique over the keys
        codes = rng.integers(0, 7, 5000)
        bins = rng.integers(-5, high, 5000)
        pairs, counts = np.unique(np.stack([codes, bins]), axis=1, return_counts=True)
        got = _pair_counts(codes, bins)
        assert [g.tolist() for g in got] == [pairs[0].tolist(), pairs[1].tolist(), counts.tolist()]
