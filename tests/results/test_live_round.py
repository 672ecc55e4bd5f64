"""A round as it unfolds (issue 27, item 4): each shard's part file lands as the shard ends, and
`RoundReader` adds the new parts only, ending with exactly what the finished round holds."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from run_configs import run_config

from workbench.results import Bundle, live_round
from workbench.results.layout import part_path, round_dir
from workbench.results.live_round import RoundReader
from workbench.runtime import RunStarted, ShardProgress, Simulation
from workbench.viz.distributions import guess_counts


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory, education_spec) -> Bundle:
    """Forty agents in four shards of ten, real-valued guesses, two rounds."""

    config = run_config(
        education_spec,
        agents_per_shard=10,
        name="live",
        seed=3,
        n_agents=40,
        policy={"kind": "random", "integer": False},
    )
    out = tmp_path_factory.mktemp("live")
    return Simulation(config).run(out_dir=out, progress=False)


def parts_at_done(sim: Simulation, out_dir: Path) -> list[tuple[int, int, bool, int]]:
    """(round, shard, its part file is there, rounds ended) at each shard's "done" event."""
    seen: list[tuple[int, int, bool, int]] = []
    bundle: list[Path] = []

    def on_event(event) -> None:
        if isinstance(event, RunStarted):
            bundle.append(Path(event.bundle))
        if isinstance(event, ShardProgress) and event.state == "done":
            path = part_path(bundle[0], event.round, event.shard)
            rounds = Bundle.open(bundle[0]).rounds_count
            seen.append((event.round, event.shard, path.is_file(), rounds))

    sim.run(out_dir=out_dir, progress=False, on_event=on_event)
    return sorted(seen)


def test_each_shards_part_file_lands_before_its_round_ends(make_config, tmp_path: Path) -> None:
    config = make_config(n_agents=12, rounds=2, agents_per_shard=4)
    # every shard's part is on disk when its "done" arrives, while its round is still open
    expected = [(r, s, True, r - 1) for r in (1, 2) for s in range(3)]
    assert parts_at_done(Simulation(config), tmp_path) == expected


@pytest.mark.ray
def test_a_ray_shards_part_file_lands_before_its_round_ends(
    ray_cluster, make_config, tmp_path: Path
) -> None:
    from workbench.config import BackendSpec

    config = make_config(n_agents=8, rounds=2, agents_per_shard=4)
    backend = BackendSpec(kind="ray", address=ray_cluster.address, agents_per_shard=4)
    sim = Simulation(config.model_copy(update={"backend": backend}))
    expected = [(r, s, True, r - 1) for r in (1, 2) for s in range(2)]
    assert parts_at_done(sim, tmp_path) == expected


def test_the_reader_adds_parts_one_by_one_up_to_the_finished_round(
    finished: Bundle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[Path] = []
    real = live_round.read_parquet

    def counted(path: Path, columns: list[str] | None = None):
        reads.append(path)
        return real(path, columns)

    monkeypatch.setattr(live_round, "read_parquet", counted)
    live = tmp_path / "live"
    reader = RoundReader(live)
    assert reader.poll(2).shards == () and np.isnan(reader.poll(2).mean)  # no folder yet
    parts = finished.response_files(2)
    assert len(parts) == 4
    round_dir(live, 2).mkdir(parents=True)
    for i, part in enumerate(parts, start=1):
        shutil.copy(part, round_dir(live, 2) / part.name)
        (round_dir(live, 2) / f".{part.name}.tmp").write_bytes(b"half written")  # never read
        so_far = reader.poll(2)
        assert so_far.shards == tuple(range(i)) and so_far.answers == 10 * i
        assert reader.poll(2) is so_far  # nothing new: nothing read
    assert len(reads) == 4 and len(set(reads)) == 4  # each part read once

    counts = guess_counts(finished, 2)
    assert so_far.bins.tolist() == counts["guess"].tolist()
    assert so_far.counts.tolist() == counts["count"].tolist()
    row = finished.rounds().set_index("round").loc[2]
    assert so_far.valid == row["n_valid"] == 40
    assert so_far.mean == pytest.approx(row["mean"], rel=1e-12)
    # another round starts new tallies
    assert reader.poll(3).answers == 0 and reader.poll(3).round == 3
