"""One round's answers joined to a persona column: the selection every analysis starts from.

A bundle's responses are joined to its personas by `agent_id` (one hashed lookup for the whole
round), and the persona column `by` becomes integer category codes, so the analyses group with
numpy (`bincount`, one sort) and stay exact and cheap at a million agents.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.compute as pc

from workbench.errors import BundleError, ConfigError
from workbench.results import Bundle

ALL = "all"
"""The one category of `by=None`: the whole population."""

MISSING = "(missing)"
"""The category of agents whose persona has no value in the `by` column."""

VALID_STATUS = "ok"
"""The parse status of a valid answer; every other status is left out of the statistics."""

BundleLike = Bundle | str | Path
"""A bundle, or the path of one."""


@dataclass(frozen=True)
class Answers:
    """One round's answers: each agent's guess, whether it is valid, and its category code."""

    round: int
    by: str | None
    categories: list[Any]
    codes: np.ndarray
    guesses: np.ndarray
    valid: np.ndarray

    def valid_only(self) -> tuple[np.ndarray, np.ndarray]:
        """(codes, guesses) of the valid answers (status ok and a finite guess)."""
        return self.codes[self.valid], self.guesses[self.valid]

    def answers_per_category(self) -> np.ndarray:
        """How many answers (of any status) each category has."""
        return np.bincount(self.codes, minlength=len(self.categories))


def as_bundle(bundle: BundleLike) -> Bundle:
    """A Bundle from a Bundle or a bundle path."""
    return bundle if isinstance(bundle, Bundle) else Bundle.open(bundle)


Bundles = Mapping[str, BundleLike] | Sequence[BundleLike] | BundleLike
"""Several bundles: a mapping label -> bundle, a sequence (labelled by run id), or one."""


def labelled(bundles: Bundles, minimum: int = 1, where: str = "bundles") -> dict[str, Bundle]:
    """{label: opened bundle}: a mapping's own labels, else run ids (`#2` after a repeat).

    One bundle (or its path) is a list of one. ConfigError (naming `where`) for fewer than
    `minimum` bundles; BundleError for one that is not a bundle.
    """
    if isinstance(bundles, Bundle | str) or hasattr(bundles, "__fspath__"):
        bundles = [bundles]  # type: ignore[list-item]
    items = list(bundles.items()) if isinstance(bundles, Mapping) else [(None, b) for b in bundles]
    if len(items) < minimum:
        wanted = "one" if minimum == 1 else "two" if minimum == 2 else str(minimum)
        raise ConfigError(
            f"{where}: give {wanted} or more bundles (a list, or a mapping label: bundle), "
            f"got {len(items)}"
        )
    out: dict[str, Bundle] = {}
    for label, given in items:
        bundle = as_bundle(given)
        name = str(label) if label is not None else bundle.run_id
        number = 2
        while name in out:
            name, number = f"{label or bundle.run_id}#{number}", number + 1
        out[name] = bundle
    return out


def rounds_played(bundle: Bundle) -> list[int]:
    """The bundle's finished rounds, in order (from rounds.parquet)."""
    return sorted(int(r) for r in bundle.rounds()["round"])


def resolve_round(bundle: Bundle, round: int | None) -> int:
    """`round`, or the last finished round when None; ValueError naming the rounds there are."""
    played = rounds_played(bundle)
    if not played:
        raise ValueError(f"{bundle.path}: the bundle has no finished round")
    if round is None:
        return played[-1]
    if round not in played:
        raise ValueError(f"{bundle.path}: no round {round}; rounds: {played}")
    return round


def category_codes(personas: pd.DataFrame, by: str | None) -> tuple[list[Any], np.ndarray]:
    """The categories of persona column `by` and each persona's code into them.

    A categorical column keeps its declared order and its empty categories (a category with
    no agent still gets a row); any other column is sorted. Missing values are a category of
    their own, MISSING, last. ConfigError naming the known columns when `by` is not one.
    """
    if by is None:
        return [ALL], np.zeros(len(personas), dtype=np.int64)
    if by == "agent_id" or by not in personas.columns:
        known = sorted(c for c in personas.columns if c != "agent_id")
        raise ConfigError(f"by: no persona column {by!r}; columns: {known}")
    column = personas[by]
    if isinstance(column.dtype, pd.CategoricalDtype):
        categories = list(column.cat.categories)
        codes = column.cat.codes.to_numpy(dtype=np.int64)
    else:
        raw, uniques = pd.factorize(column, sort=True)
        categories, codes = list(uniques), raw.astype(np.int64)
    if (codes < 0).any():
        codes = np.where(codes < 0, len(categories), codes)
        categories.append(MISSING)
    return categories, codes


def round_answers(bundle: BundleLike, round: int | None = None, by: str | None = None) -> Answers:
    """One round's answers (the last round when None) with their agents' categories of `by`."""
    bundle = as_bundle(bundle)
    number = resolve_round(bundle, round)
    personas = bundle.personas()
    categories, persona_codes = category_codes(personas, by)
    table = bundle.responses_table(number).select(["agent_id", "guess", "status"])
    ids = table.column("agent_id").to_numpy()
    where = pd.Index(personas["agent_id"].to_numpy()).get_indexer(ids)
    if (where < 0).any():
        stray = ids[where < 0][:5].tolist()
        raise BundleError(f"{bundle.path}: round {number} has answers of unknown agents {stray}")
    guesses = table.column("guess").to_numpy(zero_copy_only=False).astype(np.float64)
    ok = pc.fill_null(pc.equal(table.column("status"), VALID_STATUS), False)
    valid = ok.to_numpy(zero_copy_only=False) & np.isfinite(guesses)
    return Answers(number, by, categories, persona_codes[where], guesses, valid)
