"""The game's arithmetic: equilibrium, target, winners and one round's statistics.

Everything here is vectorised numpy so a round of 10 million agents costs a few array passes.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from workbench.config import GameSpec
from workbench.game.parse import Status

TIE_TOLERANCE = 1e-9
"""Distances to the target that differ by at most this much count as equal (float ties)."""

WITHIN = 0.5
"""Half-width of the "close to the target" band the paper reports (|guess - target| <= 0.5)."""

FAILED_STATUSES: tuple[str, ...] = (Status.MODEL_ERROR.value, Status.TIMEOUT.value)
"""Statuses of answers whose model call failed (no answer came back): counted as `n_failed`."""


def equilibrium(game: GameSpec) -> float:
    """The Nash equilibrium guess offset / (1 - ratio), clipped to [low, high].

    With ratio 1 the fixed point does not exist: offset 0 makes every guess an equilibrium
    (returns nan), a positive offset drifts up to `high` and a negative one down to `low`.
    """
    if game.ratio == 1:
        if game.offset == 0:
            return float("nan")
        return game.high if game.offset > 0 else game.low
    return min(max(game.offset / (1 - game.ratio), game.low), game.high)


def target(mean: float, game: GameSpec) -> float:
    """The number to be closest to: offset + ratio * mean (nan when the mean is nan)."""
    return float(game.offset + game.ratio * mean)


@dataclass(frozen=True)
class RoundStats:
    """Summary of one round over the valid guesses (`n` also counts the invalid ones).

    With no valid guess the mean, median, std, target and winning guess are nan. `n_failed`
    counts the answers whose model call failed (FAILED_STATUSES) and `n_extracted` those read
    by the extraction call; both came later, so older bundles lack them (read as 0).
    """

    n: int
    n_valid: int
    mean: float
    median: float
    std: float
    target: float
    winning_guess: float
    n_winners: int
    share_within_half: float
    n_failed: int = 0
    n_extracted: int = 0

    def as_dict(self) -> dict:
        """The fields as a plain dict, for tables and JSON."""
        return dataclasses.asdict(self)


ROUND_STAT_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(RoundStats))
"""The names of one round's statistics, in order: the columns rounds.parquet and verify use."""


def _checked(guesses: np.ndarray, valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Guesses as float64 and the usable mask (valid and finite); shapes must match."""
    values = np.asarray(guesses, dtype=np.float64)
    mask = np.asarray(valid, dtype=bool)
    if values.shape != mask.shape:
        raise ValueError(f"guesses has shape {values.shape} but valid has shape {mask.shape}")
    return values, mask & np.isfinite(values)


def _closest(distance: np.ndarray) -> np.ndarray:
    """Mask of the entries at the minimum distance (within TIE_TOLERANCE); none if all inf."""
    best = distance.min(initial=np.inf)
    if not np.isfinite(best):
        return np.zeros(distance.shape, dtype=bool)
    return distance <= best + TIE_TOLERANCE


def winners(guesses: np.ndarray, valid: np.ndarray, target: float) -> np.ndarray:
    """Bool mask of the valid agents closest to `target`; every tied agent wins.

    Non-finite guesses count as invalid. No one wins when the target is nan or nothing is valid.
    """
    values, usable = _checked(guesses, valid)
    if math.isnan(target):
        return np.zeros(values.shape, dtype=bool)
    return _closest(np.where(usable, np.abs(values - target), np.inf))


def _count(mask: np.ndarray | None, size: int, name: str) -> int:
    """True entries of an optional per-agent bool mask (0 when None); its size must match."""
    if mask is None:
        return 0
    flags = np.asarray(mask, dtype=bool)
    if flags.shape != (size,):
        raise ValueError(f"{name} has shape {flags.shape} but guesses has shape {(size,)}")
    return int(np.count_nonzero(flags))


def round_stats(
    guesses: np.ndarray,
    valid: np.ndarray,
    game: GameSpec,
    *,
    failed: np.ndarray | None = None,
    extracted: np.ndarray | None = None,
) -> RoundStats:
    """Statistics of one round; invalid (or non-finite) guesses are left out of all but `n`.

    std is the population std (ddof=0). When the closest guesses tie on two different values
    (target exactly between them), `winning_guess` is the smaller one. `failed` and `extracted`
    are per-agent masks counted into `n_failed` and `n_extracted` (0 when not given).
    """
    values, usable = _checked(guesses, valid)
    counts = {
        "n_failed": _count(failed, values.size, "failed"),
        "n_extracted": _count(extracted, values.size, "extracted"),
    }
    picked = values[usable]
    if picked.size == 0:
        nan = float("nan")
        return RoundStats(values.size, 0, nan, nan, nan, nan, nan, 0, 0.0, **counts)
    mean = float(picked.mean())
    goal = target(mean, game)
    distance = np.abs(picked - goal)
    won = _closest(distance)
    near = np.count_nonzero(distance <= WITHIN + TIE_TOLERANCE)
    return RoundStats(
        n=values.size,
        n_valid=picked.size,
        mean=mean,
        median=float(np.median(picked)),
        std=float(picked.std()),
        target=goal,
        winning_guess=float(picked[won].min()),
        n_winners=int(np.count_nonzero(won)),
        share_within_half=float(near / picked.size),
        **counts,
    )
