"""Bundles side by side: only the config keys that differ, then their round statistics.

Both functions take bundles (or their paths) as a list, labelled by run id, or as a mapping
{label: bundle}; `workbench bundles compare` prints what they return.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError
from workbench.experiment.grid import flatten
from workbench.results import Bundle
from workbench.viz.answers import Bundles
from workbench.viz.answers import labelled as viz_labelled

if TYPE_CHECKING:
    import pandas as pd


ROUND_STATS: tuple[str, ...] = ("mean", "target", "n_valid")
"""The round statistics `compare_rounds` lines up by default."""


def labelled(bundles: Bundles) -> dict[str, Bundle]:
    """{label: opened bundle} of two or more bundles, labelled as the viz plots label them."""
    return viz_labelled(bundles, minimum=2, where="compare")


def _shown(value: Any) -> Any:
    """A config value for a table cell: lists and mappings as compact JSON."""
    return json.dumps(value) if isinstance(value, list | dict) else value


def config_differences(bundles: Bundles) -> pd.DataFrame:
    """One row per dotted config key whose value differs between the bundles (index `key`),
    one column per bundle, numbers as written (`2/3`); keys that agree everywhere are left out."""
    return _differences(
        {label: flatten(b.config.as_written()) for label, b in labelled(bundles).items()}
    )


MODEL_VOLATILE = ("n_threads", "threads", "servers", "base_urls")
"""What-answered keys that do not change answers (where and on how many threads it ran)."""


def model_differences(bundles: Bundles) -> pd.DataFrame:
    """One row per dotted key of what answered (the manifest's model identity: engine version,
    the CPU features its build uses, the sampling mode and sampler) that differs between the
    bundles: answers of the same config differ when these do."""
    flat = {
        label: {
            key: value
            for key, value in flatten({"model": b.model}).items()
            if key.rsplit(".", 1)[-1] not in MODEL_VOLATILE
        }
        for label, b in labelled(bundles).items()
    }
    return _differences(flat)


def _differences(flat: dict[str, dict[str, Any]]) -> pd.DataFrame:
    """The keys of flattened dicts (one per bundle label) whose values differ."""
    import pandas as pd

    keys = list(dict.fromkeys(k for one in flat.values() for k in one))
    missing = object()
    rows = {}
    for key in keys:
        values = [one.get(key, missing) for one in flat.values()]
        if any(v != values[0] for v in values[1:]):
            rows[key] = [None if v is missing else _shown(v) for v in values]
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=list(flat), dtype=object)
    frame.index.name = "key"
    return frame


def compare_rounds(bundles: Bundles, stats: Sequence[str] = ROUND_STATS) -> pd.DataFrame:
    """The bundles' round statistics side by side: one row per round (index `round`), columns
    (bundle label, statistic); a round one bundle did not play is empty there."""
    import pandas as pd

    frames = {}
    for label, bundle in labelled(bundles).items():
        rounds = bundle.rounds()
        unknown = [s for s in stats if s not in rounds.columns]
        if unknown:
            raise ConfigError(
                f"compare: unknown round statistics {unknown}; known: {list(rounds.columns)}"
            )
        frames[label] = rounds.set_index("round")[list(stats)]
    frame = pd.concat(frames, axis=1, names=["bundle", "statistic"])
    return frame.sort_index()
