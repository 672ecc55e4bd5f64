"""Quota counts and population sampling: exact counts, conditional groups, iid draws, seeding."""

import numpy as np
import pandas as pd
import pytest

from workbench.config import PopulationSpec, validate
from workbench.errors import ConfigError
from workbench.population import (
    counts_table,
    dimension_share_matrix,
    marginal_shares,
    quota_counts,
    sample_population,
)

PROFESSION = [0.1666666667] * 4 + [0.1666666666] * 2  # decimals that sum to exactly 1


def make_spec(**data: object) -> PopulationSpec:
    return validate(PopulationSpec, data, "test")


def flat_spec(sampling: str = "quota") -> PopulationSpec:
    return make_spec(
        sampling=sampling,
        dimensions=[
            {"name": "gender", "shares": {"male": 0.5, "female": 0.5}},
            {"name": "education", "shares": {f"e{i}": 0.2 for i in range(5)}},
            {"name": "region", "shares": {"north": 1 / 3, "south": 1 / 3, "west": 1 / 3}},
            {"name": "job", "shares": dict(zip("abcdef", PROFESSION, strict=True))},
        ],
    )


def conditional_spec(sampling: str = "quota") -> PopulationSpec:
    return make_spec(
        sampling=sampling,
        dimensions=[
            {"name": "education", "shares": {"school": 0.5, "bachelor": 0.3, "phd": 0.2}},
            {
                "name": "occupation",
                "given": "education",
                "shares": {
                    "school": {"athlete": 0.6, "artist": 0.4},
                    "bachelor": {"athlete": 0.2, "artist": 0.3, "economist": 0.5},
                    "phd": {"economist": 0.7, "professor": 0.3},
                },
            },
        ],
    )


@pytest.mark.parametrize(
    ("shares", "n", "expected"),
    [
        ([0.5, 0.5], 7, [4, 3]),
        ([0.5, 0.5], 101, [51, 50]),
        ([0.5, 0.5], 999, [500, 499]),
        ([0.2] * 5, 7, [2, 2, 1, 1, 1]),
        ([0.2] * 5, 101, [21, 20, 20, 20, 20]),
        ([0.2] * 5, 999, [200, 200, 200, 200, 199]),
        ([1 / 3] * 3, 7, [3, 2, 2]),
        ([1 / 3] * 3, 101, [34, 34, 33]),
        ([1 / 3] * 3, 999, [333, 333, 333]),
        (PROFESSION, 7, [2, 1, 1, 1, 1, 1]),
        (PROFESSION, 101, [17, 17, 17, 17, 17, 16]),
        (PROFESSION, 999, [167, 167, 167, 166, 166, 166]),
        ([0.6, 0.3, 0.1], 7, [4, 2, 1]),
        ([0.1, 0.0, 0.9], 3, [0, 0, 3]),
    ],
)
def test_quota_counts_exact(shares: list[float], n: int, expected: list[int]) -> None:
    counts = quota_counts(shares, n)
    assert counts.tolist() == expected
    assert counts.dtype == np.int64


def test_quota_counts_always_sum_to_n_and_stay_within_one_of_the_quota() -> None:
    rng = np.random.default_rng(7)
    for _ in range(300):
        shares = rng.dirichlet(np.ones(rng.integers(1, 9)))
        n = int(rng.integers(0, 100_000))
        counts = quota_counts(shares, n)
        assert counts.sum() == n
        assert np.all(np.abs(counts - shares / shares.sum() * n) < 1)


def test_quota_counts_zero_and_negative_n() -> None:
    assert quota_counts([0.5, 0.5], 0).tolist() == [0, 0]
    with pytest.raises(ConfigError, match="n must be >= 0, got -1"):
        quota_counts([0.5, 0.5], -1)
    with pytest.raises(ConfigError, match="shares must be finite and >= 0"):
        quota_counts([1.5, -0.5], 3)
    with pytest.raises(ConfigError, match="non-empty"):
        quota_counts([], 3)


@pytest.mark.parametrize("n", [7, 101, 999, 200_003])
def test_sampled_columns_have_the_quota_counts(n: int) -> None:
    spec = flat_spec()
    frame = sample_population(spec, n, seed=1, with_text=False)
    assert frame["agent_id"].dtype == np.int64
    assert frame["agent_id"].tolist() == list(range(n))
    assert "persona" not in frame
    for dim in spec.dimensions:
        column = frame[dim.name]
        assert isinstance(column.dtype, pd.CategoricalDtype)
        assert list(column.cat.categories) == dim.categories()
        counts = column.value_counts(sort=False).reindex(dim.categories()).to_numpy()
        assert counts.tolist() == quota_counts(list(dim.shares.values()), n).tolist()


def test_large_quota_sample_is_shuffled_across_the_whole_range() -> None:
    frame = sample_population(flat_spec(), 300_000, seed=3, with_text=False)
    codes = frame["education"].cat.codes.to_numpy()
    for part in np.array_split(codes, 10):  # every tenth holds each level near its 20%
        shares = np.bincount(part, minlength=5) / part.size
        assert np.all(np.abs(shares - 0.2) < 0.01)
    assert (np.diff(codes) != 0).mean() > 0.7  # not runs of equal values


def test_conditional_dimension_counts_are_exact_within_each_parent_group() -> None:
    spec = conditional_spec()
    frame = sample_population(spec, 999, seed=5, with_text=False)
    education, occupation = spec.dimensions
    assert frame["education"].value_counts(sort=False).tolist() == [499, 300, 200]
    matrix = dimension_share_matrix(occupation, education.categories())
    for parent, row in zip(education.categories(), matrix, strict=True):
        group = frame.loc[frame["education"] == parent, "occupation"]
        counts = group.value_counts(sort=False).reindex(occupation.categories()).to_numpy()
        assert counts.tolist() == quota_counts(row, len(group)).tolist()
    # phd agents are never athletes or artists; school agents never economists
    phd = frame.loc[frame["education"] == "phd", "occupation"]
    assert set(phd) == {"economist", "professor"}
    assert (phd == "professor").sum() == 60  # 0.3 * 200


def test_iid_matches_shares_roughly_and_differs_from_quota() -> None:
    spec = conditional_spec("iid")
    frame = sample_population(spec, 200_000, seed=2, with_text=False)
    shares = frame["education"].value_counts(normalize=True, sort=False)
    assert np.allclose(shares.to_numpy(), [0.5, 0.3, 0.2], atol=0.01)
    phd = frame.loc[frame["education"] == "phd", "occupation"].value_counts(normalize=True)
    assert abs(phd["economist"] - 0.7) < 0.02 and phd[["athlete", "artist"]].sum() == 0
    iid = sample_population(spec, 1001, seed=2, with_text=False)
    quota = sample_population(conditional_spec(), 1001, seed=2, with_text=False)
    iid_counts = iid["education"].value_counts(sort=False).tolist()
    assert iid_counts != quota["education"].value_counts(sort=False).tolist()
    assert sum(iid_counts) == 1001


def test_same_seed_same_frame_other_seed_other_assignment() -> None:
    spec = flat_spec()
    first = sample_population(spec, 5000, seed=11)
    pd.testing.assert_frame_equal(first, sample_population(spec, 5000, seed=11))
    other = sample_population(spec, 5000, seed=12)
    assert not first["education"].equals(other["education"])
    for dim in spec.dimensions:  # same quota counts, different agents
        assert (
            first[dim.name]
            .value_counts()
            .sort_index()
            .equals(other[dim.name].value_counts().sort_index())
        )


def test_dimensions_draw_from_independent_streams() -> None:
    spec = flat_spec()
    fewer = make_spec(dimensions=[d.model_dump() for d in spec.dimensions[:2]])
    full = sample_population(spec, 2000, seed=4, with_text=False)
    part = sample_population(fewer, 2000, seed=4, with_text=False)
    pd.testing.assert_frame_equal(full[["agent_id", "gender", "education"]], part)
    # gender and education are not assigned in lockstep
    assert not np.array_equal(full["gender"].cat.codes, full["education"].cat.codes % 2)


@pytest.mark.parametrize("n", [0, -5])
def test_sample_population_rejects_non_positive_n(n: int) -> None:
    with pytest.raises(ConfigError, match=f"n must be >= 1, got {n}"):
        sample_population(flat_spec(), n, seed=0)


def test_sample_population_rejects_bad_seed_and_non_integer_n() -> None:
    with pytest.raises(ConfigError, match="seed must be >= 0"):
        sample_population(flat_spec(), 10, seed=-1)
    with pytest.raises(ConfigError, match="n must be an integer"):
        sample_population(flat_spec(), 10.5, seed=0)  # type: ignore[arg-type]


def test_persona_column_when_with_text() -> None:
    frame = sample_population(conditional_spec(), 50, seed=0)
    assert isinstance(frame["persona"].dtype, pd.CategoricalDtype)
    row = frame.iloc[0]
    assert f"education is {row['education']}" in row["persona"]
    assert f"occupation is {row['occupation']}" in row["persona"]


def test_marginal_shares_average_conditional_tables() -> None:
    shares = marginal_shares(conditional_spec())
    assert shares["education"] == {"school": 0.5, "bachelor": 0.3, "phd": 0.2}
    expected = {"athlete": 0.36, "artist": 0.29, "economist": 0.29, "professor": 0.06}
    assert shares["occupation"] == pytest.approx(expected)


def test_counts_table() -> None:
    spec = conditional_spec()
    frame = sample_population(spec, 999, seed=0, with_text=False)
    table = counts_table(frame, spec)
    assert list(table.columns) == ["dimension", "category", "count", "share", "target"]
    education = table[table["dimension"] == "education"]
    assert education["category"].tolist() == ["school", "bachelor", "phd"]
    assert education["count"].tolist() == [499, 300, 200]
    assert education["share"].tolist() == pytest.approx([499 / 999, 300 / 999, 200 / 999])
    assert table.groupby("dimension")["count"].sum().tolist() == [999, 999]
    bad = frame.assign(education=frame["education"].astype(str).replace("phd", "dr"))
    with pytest.raises(ConfigError, match="'education' has values outside the spec: \\['dr'\\]"):
        counts_table(bad, spec)
