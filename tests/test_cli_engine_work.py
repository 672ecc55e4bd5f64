"""The work per model engine from the shell: `workbench bundles show` sums a Ray run's engines
and `workbench runs follow` prints a line per round (a bundle written by hand,
tests/engine_bundle.py, through `workbench.cli.main` as a user types them); the events reader
keeps each round's latest try."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import in_process
from engine_bundle import NODES, engine_rows, write_engine_bundle

from workbench.results.layout import EVENTS_FILE
from workbench.runs.follower import RunFollower
from workbench.runtime.events import EngineWork, RunStarted


def test_bundles_show_sums_the_engines(tmp_path: Path) -> None:
    bundle = write_engine_bundle(tmp_path / "results")
    shown = in_process(["bundles", "show", bundle], tmp_path)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    start = lines.index("work per model engine over 3 round(s):")
    assert lines[start - 1].split()[0] == "3"  # right after the round table
    engines = [line.split() for line in lines[start + 2 : start + 5]]
    assert [row[:2] for row in engines[:2]] == [["0", NODES[0][:8]], ["1", NODES[1][:8]]]
    assert engines[2] == ["total", "3", "182", "44642", "1163", "1245", "600", "15.50"]
    shares = [line.split()[-1] for line in lines[start + 7 : start + 10]]
    assert shares == ["1.00", "0.51", "0.60"]


def test_runs_follow_prints_each_rounds_engines(tmp_path: Path) -> None:
    out = tmp_path / "results"
    write_engine_bundle(out)
    followed = in_process(["runs", "follow", "ray-run", "--results", out], tmp_path)
    assert followed.returncode == 0, followed.stderr
    lines = followed.stdout.splitlines()
    work = [line for line in lines if " engines: " in line]
    assert work == [
        "round 1 engines: 0: 1 prompts 130 tok 5 nodes 0.4 s | "
        "1: 0 prompts 0 tok 0 nodes 0.0 s | largest share 1.00",
        "round 2 engines: 0: 41 prompts 9,812 tok 230 nodes 3.1 s | "
        "1: 40 prompts 9,700 tok 228 nodes 3.0 s | largest share 0.51",
        "round 3 engines: 0: 60 prompts 15,000 tok 400 nodes 5.5 s | "
        "1: 40 prompts 10,000 tok 300 nodes 3.5 s | largest share 0.60",
    ]
    # each round's engine line comes before its round's result, as the run emits them
    assert lines.index(work[1]) + 1 == lines.index(next(x for x in lines if "round 2 done" in x))


def test_a_resumed_run_keeps_the_engine_work_of_its_kept_rounds(tmp_path: Path) -> None:
    bundle = write_engine_bundle(tmp_path)
    follower = RunFollower(bundle)
    follower.poll()
    assert sorted(follower.engines) == [1, 2, 3]
    assert follower.engines[2] == engine_rows(2)

    resumed = RunStarted(
        bundle=str(bundle), config={}, rounds=3, n_agents=200, backend="ray", resumed_after=1
    )
    other = [{**row, "round": 2} for row in engine_rows(3)]  # round 2 played again, other work
    replayed = EngineWork(round=2, engines=other)
    with (bundle / EVENTS_FILE).open("a", encoding="utf-8") as events:
        events.writelines(json.dumps(e.to_dict()) + "\n" for e in (resumed, replayed))
    follower.poll()
    assert sorted(follower.engines) == [1, 2]  # round 3 is played again: its work is not shown
    assert follower.engines[2] == other  # the round's latest try
