"""Tests for verify_bundle: honest bundles pass, killed or tampered ones are reported."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from run_configs import small_config

from workbench.errors import BundleError
from workbench.results import (
    RESPONSE_SCHEMA,
    ROUND_COLUMNS,
    Bundle,
    BundleWriter,
    VerifyReport,
    verify_bundle,
)
from workbench.results.layout import LATER_STATS

GUESSES = {1: [10.0, 20.0, 35.0, 50.0], 2: [5.0, 12.0, 20.0, 33.0]}
STATUSES = {1: ["ok", "ok", "ok", "ok"], 2: ["ok", "ok", "no_number", "ok"]}


def shard_frame(round_number: int, ids: list[int]) -> pd.DataFrame:
    guesses = [GUESSES[round_number][i] for i in ids]
    statuses = [STATUSES[round_number][i] for i in ids]
    return pd.DataFrame(
        {
            "agent_id": np.array(ids, dtype=np.int64),
            "round": np.full(len(ids), round_number, dtype=np.int32),
            "guess": [g if s == "ok" else np.nan for g, s in zip(guesses, statuses, strict=True)],
            "status": statuses,
            "raw": [f"{g}" for g in guesses],
            "latency_s": np.full(len(ids), 0.1),
            "prompt_tokens": np.full(len(ids), 50, dtype=np.int32),
            "completion_tokens": np.full(len(ids), 2, dtype=np.int32),
        }
    )


def honest_bundle(root: Path, run_id: str = "r1", finish: bool = True) -> Path:
    """A two-round, two-shard bundle whose statistics come from the real round_stats."""
    from workbench.game.rules import round_stats

    config = small_config()
    writer = BundleWriter(root, config, run_id=run_id)
    writer.write_personas(pd.DataFrame({"agent_id": range(4), "gender": ["male", "female"] * 2}))
    for r in (1, 2):
        writer.write_responses(r, 0, shard_frame(r, [0, 1]))
        writer.write_responses(r, 1, shard_frame(r, [2, 3]))
        valid = np.array([s == "ok" for s in STATUSES[r]])
        stats = round_stats(np.array(GUESSES[r]), valid, config.game).as_dict()
        writer.end_round({"round": r, **stats, "seconds": 0.01})
    if finish:
        writer.finish()
    return writer.path


def rewrite_parquet(path: Path, change) -> None:
    frame = pd.read_parquet(path)
    change(frame)
    pq.write_table(pq.read_table(path).from_pandas(frame, preserve_index=False), path)


def update_manifest_entry(bundle: Path, rel: str) -> None:
    """Make the manifest agree with a tampered file, as a careful forger would."""
    manifest_path = bundle / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    data = (bundle / rel).read_bytes()
    manifest["files"][rel].update(sha256=hashlib.sha256(data).hexdigest(), bytes=len(data))
    manifest_path.write_text(json.dumps(manifest))


def test_honest_bundle_is_ok(tmp_path: Path) -> None:
    path = honest_bundle(tmp_path)
    report = verify_bundle(path)
    assert isinstance(report, VerifyReport)
    assert report.ok, report.problems
    assert report.problems == [] and report.checked_files == 6
    assert str(report).startswith("OK ") and "6 files" in str(report)


def test_a_bundle_from_before_the_extracted_column_opens_and_verifies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import workbench.results.writer as writer_module

    written = writer_module.response_table
    monkeypatch.setattr(  # the writer as it was: no `extracted` column in the part files
        writer_module, "response_table", lambda t, r: written(t, r).drop_columns(["extracted"])
    )
    path = honest_bundle(tmp_path)
    monkeypatch.undo()
    part = next((path / "responses").rglob("*.parquet"))
    assert "extracted" not in pq.read_schema(part).names
    report = verify_bundle(path)
    assert report.ok, report.problems
    table = Bundle.open(path).responses_table()
    assert table.schema.names == RESPONSE_SCHEMA.names  # conformed: unknown, not False
    assert table.column("extracted").null_count == table.num_rows == 8


def test_abandoned_run_is_incomplete(tmp_path: Path) -> None:
    path = honest_bundle(tmp_path, finish=False)  # the writer is dropped: a killed run
    bundle = Bundle.open(path)
    assert bundle.status == "dead" and not bundle.is_complete  # its writer is gone
    report = verify_bundle(path)
    assert not report.ok
    assert report.problems[0].startswith("incomplete: status is dead (its writer died; resume")
    assert len(report.problems) == 1, report.problems  # the data written so far is consistent
    assert "FAILED" in str(report) and "incomplete" in str(report)


def test_failed_run_is_reported_with_its_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        with BundleWriter(tmp_path, small_config(), run_id="r1"):
            raise ValueError("bad answer")
    report = verify_bundle(tmp_path / "r1")
    assert report.problems == ["incomplete: status is failed (ValueError: bad answer)"]


def test_modified_response_is_caught(tmp_path: Path) -> None:
    path = honest_bundle(tmp_path)
    part = path / "responses/round-1/part-00001.parquet"

    def change(frame: pd.DataFrame) -> None:
        frame.loc[0, "guess"] = 99.0

    rewrite_parquet(part, change)
    report = verify_bundle(path)
    assert not report.ok
    assert any("round-1/part-00001.parquet: sha256 differs" in p for p in report.problems)
    assert any(p.startswith("rounds.parquet round 1: mean") for p in report.problems)


def test_modified_response_with_forged_hash_is_caught_by_stats(tmp_path: Path) -> None:
    path = honest_bundle(tmp_path)
    rel = "responses/round-2/part-00000.parquet"

    def change(frame: pd.DataFrame) -> None:
        frame.loc[1, "guess"] = 0.0

    rewrite_parquet(path / rel, change)
    update_manifest_entry(path, rel)
    report = verify_bundle(path)
    assert not report.ok
    assert not any("sha256" in p for p in report.problems)
    assert any(p.startswith("rounds.parquet round 2: mean") for p in report.problems)


def test_deleted_file_is_caught(tmp_path: Path) -> None:
    path = honest_bundle(tmp_path)
    (path / "responses/round-2/part-00001.parquet").unlink()
    report = verify_bundle(path)
    assert not report.ok
    assert "responses/round-2/part-00001.parquet: listed in the manifest but missing" in (
        report.problems
    )
    assert report.checked_files == 5


def test_extra_unlisted_part_file_is_caught(tmp_path: Path) -> None:
    path = honest_bundle(tmp_path)
    extra = path / "responses/round-1/part-00002.parquet"
    pq.write_table(pq.read_table(path / "responses/round-1/part-00000.parquet"), extra)
    report = verify_bundle(path)
    assert not report.ok
    assert (
        "responses/round-1/part-00002.parquet: data file not listed in the manifest"
        in report.problems
    )


def test_altered_rounds_mean_with_updated_hash_is_caught(tmp_path: Path) -> None:
    path = honest_bundle(tmp_path)

    def change(frame: pd.DataFrame) -> None:
        frame.loc[frame["round"] == 1, "mean"] += 1.0

    rewrite_parquet(path / "rounds.parquet", change)
    update_manifest_entry(path, "rounds.parquet")
    report = verify_bundle(path)
    assert not report.ok
    assert len(report.problems) == 1, report.problems
    assert report.problems[0].startswith("rounds.parquet round 1: mean is 29.75")


def test_rounds_count_mismatch_is_caught(tmp_path: Path) -> None:
    path = honest_bundle(tmp_path)
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["rounds"] = manifest["rounds"][:1]
    (path / "manifest.json").write_text(json.dumps(manifest))
    report = verify_bundle(path)
    assert report.problems == ["manifest lists 1 round(s), rounds.parquet has 2"]


def test_edited_config_yaml_is_caught(tmp_path: Path) -> None:
    path = honest_bundle(tmp_path)
    text = (path / "config.yaml").read_text().replace("n_agents: 4", "n_agents: 5")
    (path / "config.yaml").write_text(text)
    report = verify_bundle(path)
    assert report.problems == ["config.yaml: differs from the config in the manifest"]


def test_corrupt_part_file_is_reported_not_raised(tmp_path: Path) -> None:
    path = honest_bundle(tmp_path)
    (path / "responses/round-1/part-00000.parquet").write_bytes(b"garbage")
    report = verify_bundle(path)
    assert not report.ok
    assert any("not a readable Parquet file" in p for p in report.problems)


def test_part_without_agent_id_is_reported_not_raised(tmp_path: Path) -> None:
    path = honest_bundle(tmp_path)
    part = path / "responses/round-2/part-00001.parquet"
    pq.write_table(pq.read_table(part).drop_columns(["agent_id"]), part)
    report = verify_bundle(path)
    assert not report.ok
    assert any("missing column(s) ['agent_id']" in p for p in report.problems)


def test_not_a_bundle_raises(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match="not a result bundle"):
        verify_bundle(tmp_path)
    with pytest.raises(BundleError, match="not a result bundle"):
        verify_bundle(tmp_path / "missing")


# --------------------------------------------------------------------------- later statistics


def as_an_older_writer_wrote_it(path: Path) -> None:
    """Drop the statistics added later (n_failed, n_extracted) from rounds.parquet,
    groups.parquet and the manifest's rounds, with the hashes an older writer would list."""
    later = list(LATER_STATS)
    for name in ("rounds.parquet", "groups.parquet"):
        if (path / name).is_file():
            pq.write_table(pq.read_table(path / name).drop_columns(later), path / name)
            update_manifest_entry(path, name)
    manifest = json.loads((path / "manifest.json").read_text())
    manifest["rounds"] = [
        {k: v for k, v in r.items() if k not in later} for r in manifest["rounds"]
    ]
    (path / "manifest.json").write_text(json.dumps(manifest))


def grouped_bundle(root: Path) -> Path:
    """honest_bundle's rounds with per-gender groups, one answer of round 2 a model error."""
    from workbench.game.rules import round_stats

    config = small_config(game={"group_by": "gender"})
    gender = np.array(["male", "female"] * 2)
    writer = BundleWriter(root, config, run_id="grouped")
    writer.write_personas(pd.DataFrame({"agent_id": range(4), "gender": gender}))
    for r in (1, 2):
        frame = shard_frame(r, [0, 1, 2, 3])
        if r == 2:
            frame.loc[3, ["status", "guess"]] = ["model_error", np.nan]
        writer.write_responses(r, 0, frame)
        guesses = frame["guess"].to_numpy()
        valid = (frame["status"] == "ok").to_numpy()
        failed = (frame["status"] == "model_error").to_numpy()
        groups = [
            {
                "group": g,
                **round_stats(
                    guesses[gender == g],
                    valid[gender == g],
                    config.game,
                    failed=failed[gender == g],
                ).as_dict(),
            }
            for g in ("female", "male")
        ]
        writer.write_group_stats(r, groups)
        stats = round_stats(guesses, valid, config.game, failed=failed).as_dict()
        writer.end_round({"round": r, **stats, "seconds": 0.01})
    writer.finish()
    return writer.path


def test_a_bundle_holds_the_failed_count_and_verify_checks_it(tmp_path: Path) -> None:
    path = grouped_bundle(tmp_path)
    assert verify_bundle(path).ok, verify_bundle(path).problems
    bundle = Bundle.open(path)
    assert bundle.rounds()["n_failed"].tolist() == [0, 1]
    assert bundle.groups()["n_failed"].tolist() == [0, 0, 1, 0]  # agent 3: female, round 2

    def change(frame: pd.DataFrame) -> None:
        frame.loc[frame["round"] == 2, "n_failed"] = 0

    rewrite_parquet(path / "rounds.parquet", change)
    update_manifest_entry(path, "rounds.parquet")
    assert verify_bundle(path).problems == [
        "rounds.parquet round 2: n_failed is 0, recomputed from responses 1"
    ]


def test_an_older_bundle_without_the_later_counts_opens_and_verifies(tmp_path: Path) -> None:
    path = grouped_bundle(tmp_path)
    as_an_older_writer_wrote_it(path)
    bundle = Bundle.open(path)
    assert "n_failed" not in bundle.rounds(as_written=True).columns
    assert "n_failed" not in bundle.groups(as_written=True).columns
    report = verify_bundle(path)
    assert report.ok, report.problems
    rounds = bundle.rounds()  # read as 0: not recorded
    assert tuple(rounds.columns) == ROUND_COLUMNS
    assert rounds["n_failed"].tolist() == [0, 0] and rounds["n_extracted"].dtype == np.int64
    assert bundle.groups()["n_failed"].tolist() == [0, 0, 0, 0]


def test_rounds_that_did_not_record_the_later_counts_read_as_0(tmp_path: Path) -> None:
    """A resumed older bundle: its earlier rounds come back from manifest entries without them."""
    from workbench.game.rules import round_stats

    config = small_config()
    with BundleWriter(tmp_path, config, run_id="mixed") as writer:
        writer.write_personas(pd.DataFrame({"agent_id": range(4), "gender": ["male"] * 4}))
        for r in (1, 2):
            writer.write_responses(r, 0, shard_frame(r, [0, 1, 2, 3]))
            valid = np.array([s == "ok" for s in STATUSES[r]])
            stats = round_stats(np.array(GUESSES[r]), valid, config.game).as_dict()
            if r == 1:
                stats = {k: v for k, v in stats.items() if k not in LATER_STATS}
            writer.end_round({"round": r, **stats, "seconds": 0.01})
    bundle = Bundle.open(tmp_path / "mixed")
    assert bundle.rounds(as_written=True)["n_failed"].isna().tolist() == [True, False]
    assert bundle.rounds()["n_failed"].tolist() == [0, 0]
    assert verify_bundle(bundle.path).ok
