"""Groups as sub-environments: per-group statistics per round, recomputed by verify."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from workbench._files import sha256_file as _sha256
from workbench.config import RunConfig
from workbench.errors import ConfigError
from workbench.game import round_stats
from workbench.results import verify_bundle
from workbench.runtime import Simulation


def _config(education_spec, **game) -> RunConfig:
    return RunConfig(
        name="groups",
        seed=5,
        n_agents=300,
        population=education_spec,
        policy={"kind": "level_k", "attribute": "education",
                "by_attribute": {"doctoral degree": {3: 1.0}}},
        game={"rounds": 2, "group_by": "education", **game},
    )  # fmt: skip


def test_group_statistics_per_round(education_spec, tmp_path: Path) -> None:
    bundle = Simulation(_config(education_spec)).run(out_dir=tmp_path, progress=False)
    groups = bundle.groups()
    assert len(groups) == 2 * 5 and set(groups["round"]) == {1, 2}
    responses = bundle.responses(1).merge(bundle.personas(), on="agent_id")
    doctors = responses[responses["education"] == "doctoral degree"]
    row = groups[(groups["round"] == 1) & (groups["group"] == "doctoral degree")].iloc[0]
    expected = round_stats(doctors["guess"].to_numpy(), (doctors["status"] == "ok").to_numpy(),
                           bundle.config.game)  # fmt: skip
    assert row["n"] == len(doctors) == 60
    assert row["mean"] == pytest.approx(expected.mean)
    assert row["target"] == pytest.approx(2 / 3 * expected.mean)
    # every doctor reasons 3 levels deep: one guess, so the group's std is 0
    assert row["std"] == pytest.approx(0.0)
    assert verify_bundle(bundle.path).ok


def test_verify_catches_altered_group_statistics(education_spec, tmp_path: Path) -> None:
    bundle = Simulation(_config(education_spec)).run(out_dir=tmp_path, progress=False)
    path = bundle.path / "groups.parquet"
    table = pq.read_table(path).to_pandas()
    table.loc[0, "mean"] += 1.0
    pq.write_table(pa.Table.from_pandas(table, preserve_index=False), path)
    manifest = json.loads((bundle.path / "manifest.json").read_text())
    manifest["files"]["groups.parquet"].update(sha256=_sha256(path), bytes=path.stat().st_size)
    (bundle.path / "manifest.json").write_text(json.dumps(manifest))
    report = verify_bundle(bundle.path)
    assert not report.ok
    assert any("groups.parquet round 1" in p and "mean" in p for p in report.problems)


def test_unknown_group_column_is_rejected_before_writing(education_spec, tmp_path: Path) -> None:
    config = _config(education_spec, group_by="city")
    with pytest.raises(ConfigError, match="game.group_by: 'city'"):
        Simulation(config).run(out_dir=tmp_path, progress=False)
    assert list(tmp_path.iterdir()) == []
