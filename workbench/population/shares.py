"""Shares of a population spec: per-dimension matrices, marginals and exact quota counts.

The one place both sampling (`sample.py`) and persona text (`personas.py`) read shares from, so
neither imports the other.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np

from workbench.config import DimensionSpec, PopulationSpec
from workbench.errors import ConfigError

__all__ = ["as_int", "dimension_share_matrix", "marginal_shares", "quota_counts"]


def as_int(value: object, name: str) -> int:
    """`value` as a Python int; ConfigError (a ValueError) for floats, strings and bools."""
    if isinstance(value, bool):
        raise ConfigError(f"{name} must be an integer, got {value!r}")
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise ConfigError(f"{name} must be an integer, got {value!r}") from None


def quota_counts(shares: Sequence[float], n: int) -> np.ndarray:
    """Exact counts summing to n by the largest remainder (Hamilton) method.

    Ties between equal remainders go to the earlier category, so the result is deterministic.
    """
    n = as_int(n, "n")
    if n < 0:
        raise ConfigError(f"n must be >= 0, got {n}")
    weights = np.asarray(shares, dtype=np.float64)
    if weights.ndim != 1 or weights.size == 0:
        raise ConfigError("shares must be a non-empty list of numbers")
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise ConfigError(f"shares must be finite and >= 0, got {weights.tolist()}")
    total = weights.sum()
    if total <= 0:
        raise ConfigError(f"shares must not all be 0, got {weights.tolist()}")
    if n == 0:
        return np.zeros(weights.size, dtype=np.int64)
    if total != 1.0:  # within the validator's tolerance: rescale so the quotas sum to n
        weights = weights / total
    quotas = weights * n
    counts = np.floor(quotas).astype(np.int64)
    remainders = quotas - counts
    remainders[weights == 0] = -1.0  # a zero share never gets a seat
    left = n - int(counts.sum())
    order = np.argsort(-remainders, kind="stable")  # largest first, earlier category on ties
    if left > 0:
        counts[order[:left]] += 1
    elif left < 0:  # float rounding pushed a floor up: take seats back from the smallest remainders
        for i in order[::-1]:
            if left == 0:
                break
            if counts[i] > 0:
                counts[i] -= 1
                left += 1
    return counts


def dimension_share_matrix(dim: DimensionSpec, parent_categories: Sequence[str] = ()) -> np.ndarray:
    """Shares as a (parent categories x categories) matrix; one row for an unconditional dimension.

    Columns follow `dim.categories()`, rows `parent_categories`; missing entries are 0.
    """
    categories = dim.categories()
    if dim.given is None:
        tables = [dim.shares]
    else:
        tables = [dim.shares[parent] for parent in parent_categories]  # type: ignore[misc]
    matrix = np.zeros((len(tables), len(categories)), dtype=np.float64)
    column = {c: j for j, c in enumerate(categories)}
    for i, table in enumerate(tables):
        for category, share in table.items():  # type: ignore[union-attr]
            matrix[i, column[category]] = float(share)  # type: ignore[arg-type]
    return matrix


def marginal_shares(spec: PopulationSpec) -> dict[str, dict[str, float]]:
    """Each dimension's overall shares; a conditional one is averaged over its parent's shares."""
    result: dict[str, dict[str, float]] = {}
    for dim in spec.dimensions:
        if dim.given is None:
            row = dimension_share_matrix(dim)[0]
        else:
            parent = result[dim.given]
            matrix = dimension_share_matrix(dim, list(parent))
            row = np.asarray(list(parent.values())) @ matrix
        result[dim.name] = dict(zip(dim.categories(), row.tolist(), strict=True))
    return result
