"""Sample a population spec into one row of demographic attributes per agent, vectorised.

Quota sampling gives exact counts (largest remainder) assigned by a seeded shuffle; iid sampling
draws every agent independently. Each dimension has its own random stream derived from the seed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from workbench.config import DimensionSpec, PopulationSpec
from workbench.errors import ConfigError
from workbench.population.personas import persona_texts
from workbench.population.shares import (
    as_int,
    dimension_share_matrix,
    marginal_shares,
    quota_counts,
)

# Quota codes are shuffled in blocks of this many agents (fits in a CPU cache).
_BLOCK = 1 << 16

__all__ = ["counts_table", "quota_assignment", "sample_population"]


def sample_population(
    spec: PopulationSpec, n: int, seed: int, *, with_text: bool = True
) -> pd.DataFrame:
    """One row per agent: agent_id, a Categorical column per dimension and (optionally) persona.

    Identical for the same (spec, n, seed); dimension i draws from SeedSequence([seed, i]).
    """
    n = as_int(n, "n")
    seed = as_int(seed, "seed")
    if n < 1:
        raise ConfigError(f"n must be >= 1, got {n}")
    if seed < 0:
        raise ConfigError(f"seed must be >= 0, got {seed}")
    columns: dict[str, pd.Categorical] = {}
    for index, dim in enumerate(spec.dimensions):
        rng = np.random.default_rng(np.random.SeedSequence([seed, index]))
        parent = None if dim.given is None else columns[dim.given]
        codes = _sample_codes(rng, dim, n, spec.sampling, parent)
        columns[dim.name] = pd.Categorical.from_codes(
            codes, categories=dim.categories(), validate=False
        )
    frame = pd.DataFrame({"agent_id": np.arange(n, dtype=np.int64), **columns}, copy=False)
    if with_text:
        frame["persona"] = persona_texts(spec, frame)
    return frame


def counts_table(personas: pd.DataFrame, spec: PopulationSpec) -> pd.DataFrame:
    """Per dimension and category: count, share of agents and the spec's target (marginal) share."""
    targets = marginal_shares(spec)
    rows: list[dict[str, object]] = []
    for dim in spec.dimensions:
        if dim.name not in personas.columns:
            raise ConfigError(
                f"personas have no column {dim.name!r}; columns: {list(personas.columns)}"
            )
        categories = dim.categories()
        column = personas[dim.name]
        outside = ~column.isin(categories).to_numpy()
        if outside.any():
            unknown = sorted(map(str, set(column[outside].astype(object))))[:5]
            raise ConfigError(f"column {dim.name!r} has values outside the spec: {unknown}")
        codes = np.asarray(pd.Categorical(column, categories=categories).codes)
        counts = np.bincount(codes, minlength=len(categories))
        total = max(len(personas), 1)
        for category, count in zip(categories, counts.tolist(), strict=True):
            rows.append(
                {
                    "dimension": dim.name,
                    "category": category,
                    "count": count,
                    "share": count / total,
                    "target": targets[dim.name][category],
                }
            )
    table = pd.DataFrame(rows, columns=["dimension", "category", "count", "share", "target"])
    return table.astype({"count": np.int64})


def _sample_codes(
    rng: np.random.Generator,
    dim: DimensionSpec,
    n: int,
    sampling: str,
    parent: pd.Categorical | None,
) -> np.ndarray:
    """Category codes of one dimension for n agents, within each parent group when conditional."""
    dtype = _code_dtype(len(dim.categories()))
    if parent is None:
        return _draw(rng, dimension_share_matrix(dim)[0], n, sampling, dtype)
    parent_categories = list(parent.categories)
    matrix = dimension_share_matrix(dim, parent_categories)
    codes = np.empty(n, dtype=dtype)
    groups = _group_indices(np.asarray(parent.codes), len(parent_categories))
    for row, members in zip(matrix, groups, strict=True):
        if members.size:
            codes[members] = _draw(rng, row, members.size, sampling, dtype)
    return codes


def _draw(
    rng: np.random.Generator, shares: np.ndarray, size: int, sampling: str, dtype: type
) -> np.ndarray:
    """`size` codes: an exact-quota random arrangement, or independent draws."""
    if sampling == "quota":
        return _arrange(rng, quota_counts(shares, size), dtype)
    return _draw_iid(rng, shares, size).astype(dtype, copy=False)


def _arrange(rng: np.random.Generator, counts: np.ndarray, dtype: type) -> np.ndarray:
    """A uniformly random sequence holding counts[j] copies of code j.

    Same law as shuffling the whole array, but cache-sized: block counts are drawn from the
    multivariate hypergeometric distribution, then each block is shuffled on its own.
    """
    values = np.arange(counts.size, dtype=dtype)
    n = int(counts.sum())
    n_blocks = -(-n // _BLOCK)
    if n_blocks <= 1:
        drawn = np.repeat(values, counts)
        rng.shuffle(drawn)
        return drawn
    block_counts = np.empty((n_blocks, counts.size), dtype=np.int64)
    remaining = counts.astype(np.int64)
    for b in range(n_blocks - 1):
        block_counts[b] = rng.multivariate_hypergeometric(remaining, _BLOCK)
        remaining = remaining - block_counts[b]
    block_counts[-1] = remaining
    drawn = np.repeat(np.tile(values, n_blocks), block_counts.ravel())
    for start in range(0, n, _BLOCK):
        rng.shuffle(drawn[start : start + _BLOCK])
    return drawn


def _draw_iid(rng: np.random.Generator, shares: np.ndarray, size: int) -> np.ndarray:
    """`size` independent category codes drawn with probabilities `shares` (normalised)."""
    cdf = np.cumsum(shares)
    cdf /= cdf[-1]
    return np.searchsorted(cdf, rng.random(size), side="right")


def _group_indices(parent_codes: np.ndarray, n_groups: int) -> list[np.ndarray]:
    """Row indices of each parent category, ascending within each group (a stable counting sort)."""
    order = np.argsort(parent_codes, kind="stable")
    sizes = np.bincount(parent_codes, minlength=n_groups)
    return np.split(order, np.cumsum(sizes)[:-1])


def _code_dtype(n_categories: int) -> type[np.signedinteger]:
    """The smallest signed integer type pandas accepts for this many category codes."""
    if n_categories < 2**7:
        return np.int8
    if n_categories < 2**15:
        return np.int16
    return np.int32


def quota_assignment(shares: dict[str, float], n: int, seed: int, salt: int) -> pd.Categorical:
    """Exact-quota categories for n agents in a seeded random order (e.g. a model per agent).

    `salt` keeps this stream independent of the population's dimension streams.
    """
    names = list(shares)
    counts = quota_counts([shares[name] for name in names], n)
    codes = np.repeat(np.arange(len(names), dtype=np.int32), counts)
    np.random.default_rng(np.random.SeedSequence([seed, salt])).shuffle(codes)
    return pd.Categorical.from_codes(codes, categories=names)
