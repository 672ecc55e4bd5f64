"""Facts kept once (issue 28): no module spells again what its home defines.

A round's context is built by `RoundContext.of`, the default results folder is
`_files.results_dir`'s, the round table's columns are `results.round_table`'s (statuses and the
resume command: tests/results/test_run_statuses.py), and every model in distribution mode records
its sampling through `NodeScorer.sampling_identity`. Where a name holds the fact (a bundle row's
columns, the word for a status not known, a shard's states), the readers are checked to take it
from its home, not grepped for a spelling.
"""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest

import workbench
from workbench.results import bundle, run_statuses
from workbench.runs import launch_states, shards
from workbench.runtime.events import ShardProgress, ShardState
from workbench.ui import results_data

SOURCE = Path(workbench.__file__).parent

FACTS = {
    "RoundContext built by hand": (re.compile(r"\bRoundContext\("), "agents/shard.py"),
    "the default results folder": (re.compile(r"""=\s*(Path\()?["']results["']"""), "_files.py"),
    "a round-table column list": (
        re.compile(r"""["'](failed|winning)["']:\s*["'](n_failed|winning_guess)["']"""),
        "results/round_table.py",
    ),
    "distribution mode's sampling record": (
        re.compile(r"""["']sampler["']:\s*SAMPLER_VERSION"""),
        "llm/distribution/scorer.py",
    ),
}


def _lines(path: Path) -> list[tuple[int, str]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [(n, line.split("#")[0]) for n, line in enumerate(lines, 1)]


@pytest.mark.parametrize("fact", sorted(FACTS))
def test_a_fact_is_written_in_its_home_only(fact: str) -> None:
    pattern, home = FACTS[fact]
    found = [
        f"{path.relative_to(SOURCE)}:{number}"
        for path in sorted(SOURCE.rglob("*.py"))
        if path != SOURCE / home
        for number, code in _lines(path)
        if pattern.search(code) and "class RoundContext" not in code
    ]
    assert found == [], fact


def test_a_bundle_row_has_one_column_list(tmp_path: Path) -> None:
    """`results.bundle.BUNDLE_COLUMNS` is the one list: `list_bundles` adds `problem`,
    `list_runs` the launch, and the results picker shows the list itself."""
    assert bundle.LIST_COLUMNS == (*bundle.BUNDLE_COLUMNS, "problem")
    assert launch_states.RUN_COLUMNS == (*bundle.BUNDLE_COLUMNS, "launch_id")
    assert results_data.BUNDLE_COLUMNS is bundle.BUNDLE_COLUMNS
    assert tuple(bundle.list_bundles(tmp_path).columns) == bundle.LIST_COLUMNS
    assert tuple(launch_states.list_runs(tmp_path).columns) == launch_states.RUN_COLUMNS
    assert tuple(results_data.bundle_rows(tmp_path)[0].columns) == bundle.BUNDLE_COLUMNS


def test_a_status_not_known_and_a_shards_state_are_named_once() -> None:
    """One word for a status not known (`run_statuses.UNKNOWN`, the bundle listing's too), and
    a shard's state is a `ShardState` member in the event and as a page shows it."""
    assert bundle.UNKNOWN is run_statuses.UNKNOWN
    assert typing.get_type_hints(ShardProgress)["state"] is ShardState
    assert ShardProgress(round=1, shard=0, agents=2, state="done").state is ShardState.DONE
    assert shards.shown_state(ShardState.PLAYING, "failed") is ShardState.STOPPED
    assert shards.shown_state(ShardState.PLAYING, "running") is ShardState.PLAYING
