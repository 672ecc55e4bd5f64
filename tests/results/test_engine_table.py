"""The work per model engine summed (`results.engine_table`) and printed (`cli_tables`): from a
Ray run's bundle written by hand (tests/engine_bundle.py), every sum and share known; a local
run's bundle prints nothing; a damaged row counts as nothing done, never as an error."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest
from engine_bundle import NODES, engine_rows, write_engine_bundle

from workbench.cli_tables import engine_line, engine_work_text
from workbench.results import Bundle, BundleWriter
from workbench.results.engine_table import (
    ENGINE_SUMS,
    ROUND_SUM_COLUMNS,
    engine_totals,
    largest_share,
    round_sums,
    shares,
)
from workbench.results.layout import ENGINE_WORK_FIELDS


@pytest.fixture
def work(tmp_path: Path):
    return Bundle.open(write_engine_bundle(tmp_path)).engine_work()


def test_the_bundle_holds_each_rounds_engines(work) -> None:
    assert tuple(work.columns) == ENGINE_WORK_FIELDS
    assert work[["round", "engine"]].values.tolist() == [
        [1, 0],
        [1, 1],
        [2, 0],
        [2, 1],
        [3, 0],
        [3, 1],
    ]
    assert set(work["node"]) == set(NODES)


def test_per_engine_totals_over_the_rounds(work) -> None:
    totals = engine_totals(work)
    assert totals.to_dict("records") == [
        {"engine": 0, "node": NODES[0], "rounds": 3, "prompts": 102, "prompt_tokens": 24_942}
        | {"nodes": 635, "visits": 685, "agents": 422, "seconds": pytest.approx(9.0)},
        {"engine": 1, "node": NODES[1], "rounds": 3, "prompts": 80, "prompt_tokens": 19_700}
        | {"nodes": 528, "visits": 560, "agents": 178, "seconds": pytest.approx(6.5)},
    ]


def test_per_round_sums_and_the_largest_share(work) -> None:
    rounds = round_sums(work)
    assert tuple(rounds.columns) == ROUND_SUM_COLUMNS
    assert rounds["prompts"].tolist() == [1, 81, 100]
    assert rounds["prompt_tokens"].tolist() == [130, 19_512, 25_000]
    assert rounds["agents"].tolist() == [200, 200, 200]  # every agent drawn once a round
    assert rounds["largest_share"].tolist() == pytest.approx([1.0, 41 / 81, 0.6])


def test_a_moved_engine_lists_both_nodes_and_a_damaged_row_counts_as_nothing() -> None:
    rows = [*engine_rows(2), {**engine_rows(3)[0], "node": "c0ffee"}]
    rows.append({"round": 3, "engine": 1, "node": None, "prompts": "x", "seconds": float("inf")})
    totals = engine_totals(rows)
    assert totals["node"].tolist() == [f"{NODES[0]}, c0ffee", f"{NODES[1]}, -"]
    assert totals["prompts"].tolist() == [101, 40] and totals["seconds"].tolist()[1] == 3.0
    assert shares(["x", None, 3]) == [0.0, 0.0, 1.0]
    assert math.isnan(largest_share([0, 0])) and math.isnan(largest_share([]))


def test_bundles_show_text(work) -> None:
    text = engine_work_text(work)
    assert text is not None
    lines = text.splitlines()
    assert lines[0] == "work per model engine over 3 round(s):"
    assert lines[1].split() == ["engine", "node", "rounds", *ENGINE_SUMS]
    assert lines[2].split() == ["0", NODES[0][:8], "3", "102", "24942", "635", "685", "422", "9.00"]
    assert lines[3].split() == ["1", NODES[1][:8], "3", "80", "19700", "528", "560", "178", "6.50"]
    assert lines[4].split() == ["total", "3", "182", "44642", "1163", "1245", "600", "15.50"]
    assert lines[5].startswith("per round, summed over the engines")
    assert lines[6].split() == list(ROUND_SUM_COLUMNS)
    assert [line.split()[0::8] for line in lines[7:]] == [
        ["1", "1.00"],
        ["2", "0.51"],
        ["3", "0.60"],
    ]


def test_a_local_runs_bundle_prints_no_engine_work(
    tmp_path: Path, config, play_rounds: Callable[[BundleWriter], None]
) -> None:
    writer = BundleWriter(tmp_path, config, run_id="local")
    play_rounds(writer)
    writer.record_engine_work(3, engine_rows(3))  # a round that never finished: not read back
    writer.finish()
    assert Bundle.open(writer.path).engine_work().empty
    assert engine_work_text(Bundle.open(writer.path).engine_work()) is None


def test_the_follow_line() -> None:
    assert engine_line(2, engine_rows(2)) == (
        "round 2 engines: 0: 41 prompts 9,812 tok 230 nodes 3.1 s | "
        "1: 40 prompts 9,700 tok 228 nodes 3.0 s | largest share 0.51"
    )
    assert engine_line(4, []) == "round 4 engines: largest share -"
