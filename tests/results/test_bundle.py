"""Tests for writing and reading result bundles."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from run_configs import small_config

import workbench.results as results
from workbench._files import atomic_write
from workbench.errors import BundleError, RoundFailedError
from workbench.results import (
    RESPONSE_SCHEMA,
    ROUND_COLUMNS,
    Bundle,
    BundleWriter,
    list_bundles,
    new_run_id,
    redact,
)

SECRET = "sk-live-0123456789abcdef"


def responses(round_number: int, agent_ids: list[int], guesses: list[float]) -> pd.DataFrame:
    n = len(agent_ids)
    return pd.DataFrame(
        {
            "agent_id": np.array(agent_ids, dtype=np.int64),
            "round": np.full(n, round_number, dtype=np.int32),
            "guess": np.array(guesses, dtype=np.float64),
            "status": ["ok"] * n,
            "raw": [str(g) for g in guesses],
            "latency_s": np.full(n, 0.25),
            "prompt_tokens": np.full(n, 120, dtype=np.int32),
            "completion_tokens": np.full(n, 3, dtype=np.int32),
            "extracted": np.zeros(n, dtype=bool),
        }
    )


def personas() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "agent_id": np.arange(4, dtype=np.int64),
            "gender": ["male", "female", "male", "female"],
            "persona": [f"You are agent {i}." for i in range(4)],
        }
    )


def round_stats_dict(round_number: int) -> dict:
    return {"round": round_number, "n": 4, "n_valid": 4, "mean": 25.0, "seconds": 0.5}


def write_two_rounds(writer: BundleWriter) -> None:
    writer.write_personas(personas())
    for r in (1, 2):
        writer.write_responses(r, 1, responses(r, [3, 2], [40.0 / r, 30.0 / r]))
        writer.write_responses(r, 0, responses(r, [0, 1], [10.0 / r, 20.0 / r]))
        writer.end_round(round_stats_dict(r))


def all_files(path: Path) -> list[str]:
    return sorted(p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file())


# --------------------------------------------------------------------------- writing + reading


def test_public_names() -> None:
    assert set(results.__all__) == {
        "RESPONSE_SCHEMA",
        "ROUND_COLUMNS",
        "Bundle",
        "BundleWriter",
        "VerifyReport",
        "latest_bundle",
        "list_bundles",
        "new_run_id",
        "read_events",
        "redact",
        "run_status",
        "verify_bundle",
    }


def test_new_run_id_format() -> None:
    run_id = new_run_id("paper-2_3")
    assert re.fullmatch(r"paper-2_3-\d{8}-\d{6}-[0-9a-f]{4}", run_id)


def test_round_trip(tmp_path: Path) -> None:
    config = small_config()
    writer = BundleWriter(
        tmp_path, config, run_id="r1", versions={"engine": "none"}, seeds={"population": 7}
    )
    write_two_rounds(writer)
    writer.finish()
    assert writer.status == "complete"

    bundle = Bundle.open(tmp_path / "r1")
    assert bundle.run_id == "r1" and bundle.status == "complete" and bundle.is_complete
    assert bundle.config == config
    assert bundle.rounds_count == 2
    pd.testing.assert_frame_equal(bundle.personas(), personas())

    expected = pd.concat(
        [responses(r, [0, 1, 2, 3], [10.0 / r, 20.0 / r, 30.0 / r, 40.0 / r]) for r in (1, 2)],
        ignore_index=True,
    )
    pd.testing.assert_frame_equal(bundle.responses(), expected)
    pd.testing.assert_frame_equal(
        bundle.responses(2), expected[expected["round"] == 2].reset_index(drop=True)
    )
    assert bundle.responses(7).empty

    rounds = bundle.rounds()
    assert tuple(rounds.columns) == ROUND_COLUMNS
    assert rounds["round"].tolist() == [1, 2]
    assert rounds["mean"].tolist() == [25.0, 25.0]
    assert rounds["median"].isna().all()  # not given: stored as null

    manifest = bundle.manifest
    assert manifest["schema_version"] == 1
    assert manifest["seeds"] == {"run": 0, "population": 7}
    assert manifest["versions"]["engine"] == "none" and "pyarrow" in manifest["versions"]
    assert {"hostname", "platform", "cpu_count", "python_implementation"} <= set(manifest["host"])
    assert manifest["finished_at"] is not None and manifest["error"] is None
    assert [r["round"] for r in manifest["rounds"]] == [1, 2]
    files = manifest["files"]
    assert set(files) == {
        "personas.parquet",
        "rounds.parquet",
        "responses/round-1/part-00000.parquet",
        "responses/round-1/part-00001.parquet",
        "responses/round-2/part-00000.parquet",
        "responses/round-2/part-00001.parquet",
    }
    assert files["personas.parquet"]["rows"] == 4
    assert files["responses/round-2/part-00001.parquet"]["rows"] == 2
    assert all(re.fullmatch(r"[0-9a-f]{64}", f["sha256"]) for f in files.values())
    assert (tmp_path / "r1" / "figures").is_dir()
    # config.yaml reruns the same config
    from workbench.config import load_run_config

    assert load_run_config(tmp_path / "r1" / "config.yaml") == config


def test_readable_with_pandas_and_json_alone(tmp_path: Path) -> None:
    writer = BundleWriter(tmp_path, small_config(), run_id="r1")
    write_two_rounds(writer)
    writer.finish()
    path = tmp_path / "r1"
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    # round-<k> directories are not hive-style, so `round` comes from the files themselves
    frame = pd.read_parquet(path / "responses")
    assert len(frame) == 8 and set(frame["round"]) == {1, 2}
    assert len(pd.read_parquet(path / "rounds.parquet")) == 2


def test_write_responses_casts_fills_and_keeps_extras(tmp_path: Path) -> None:
    writer = BundleWriter(tmp_path, small_config(), run_id="r1")
    table = pa.table(
        {
            "extra_note": ["a", "b"],
            "status": ["ok", "no_number"],
            "guess": [1, None],
            "agent_id": pa.array([5, 6], pa.int32()),
        }
    )
    writer.write_responses(3, 2, table)
    stored = pq.read_table(tmp_path / "r1" / "responses" / "round-3" / "part-00002.parquet")
    assert stored.schema.names == [*RESPONSE_SCHEMA.names, "extra_note"]
    for field in RESPONSE_SCHEMA:
        assert stored.schema.field(field.name).type == field.type
    assert stored.column("round").to_pylist() == [3, 3]
    assert stored.column("raw").null_count == 2
    assert stored.column("extra_note").to_pylist() == ["a", "b"]


def test_write_responses_rejects_missing_columns_and_wrong_round(tmp_path: Path) -> None:
    writer = BundleWriter(tmp_path, small_config(), run_id="r1")
    with pytest.raises(BundleError, match=r"missing required column.*'guess'.*'status'"):
        writer.write_responses(1, 0, pd.DataFrame({"agent_id": [1]}))
    with pytest.raises(BundleError, match="'round' holds other values than 2"):
        writer.write_responses(2, 0, responses(1, [0], [5.0]))
    with pytest.raises(BundleError, match="'guess' cannot be cast"):
        writer.write_responses(
            1, 0, pd.DataFrame({"agent_id": [1], "guess": ["many"], "status": ["ok"]})
        )


def test_end_round_needs_round_and_seconds_once(tmp_path: Path) -> None:
    writer = BundleWriter(tmp_path, small_config(), run_id="r1")
    with pytest.raises(BundleError, match="seconds"):
        writer.end_round({"round": 1})
    writer.end_round({"round": np.int64(1), "seconds": np.float64(0.1), "mean": float("nan")})
    with pytest.raises(BundleError, match="already ended"):
        writer.end_round({"round": 1, "seconds": 0.2})
    manifest = json.loads((writer.path / "manifest.json").read_text())
    assert manifest["rounds"] == [{"round": 1, "seconds": 0.1, "mean": None}]
    assert manifest["status"] == "running"


def test_finish_rules(tmp_path: Path) -> None:
    writer = BundleWriter(tmp_path, small_config(), run_id="r1")
    with pytest.raises(BundleError, match="must be one of"):
        writer.finish("running")
    writer.finish("complete")
    with pytest.raises(BundleError, match="already finished"):
        writer.finish("complete")
    with pytest.raises(BundleError, match="already finished"):
        writer.write_personas(personas())


def test_record_merges_extra_keys(tmp_path: Path) -> None:
    writer = BundleWriter(tmp_path, small_config(), run_id="r1")
    writer.record(timings={"total_s": 1.5}, cluster={"nodes": 1})
    manifest = Bundle.open(writer.path).manifest
    assert manifest["timings"] == {"total_s": 1.5} and manifest["cluster"] == {"nodes": 1}
    with pytest.raises(BundleError, match="managed by the writer"):
        writer.record(status="complete")


def test_writer_refuses_existing_run_dir(tmp_path: Path) -> None:
    BundleWriter(tmp_path, small_config(), run_id="r1").finish()
    before = (tmp_path / "r1" / "manifest.json").read_bytes()
    with pytest.raises(BundleError, match="already exists"):
        BundleWriter(tmp_path, small_config(), run_id="r1")
    (tmp_path / "r2").mkdir()
    with pytest.raises(BundleError, match="never overwritten"):
        BundleWriter(tmp_path, small_config(), run_id="r2")
    assert (tmp_path / "r1" / "manifest.json").read_bytes() == before
    with pytest.raises(BundleError, match="run id"):
        BundleWriter(tmp_path, small_config(), run_id="../escape")


def test_atomic_writes_leave_no_temp_files(tmp_path: Path) -> None:
    writer = BundleWriter(tmp_path, small_config(), run_id="r1")
    write_two_rounds(writer)
    writer.record(timings={"a": 1})
    writer.finish()
    names = all_files(writer.path)
    assert not [n for n in names if n.endswith(".tmp") or "/." in f"/{n}"]
    assert names == sorted(["config.yaml", "manifest.json", *writer.manifest["files"]])


def test_atomic_write_killed_midway_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "data.bin"
    target.write_bytes(b"old")

    def dies(handle) -> None:
        handle.write(b"half of the new")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        atomic_write(target, dies)
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["data.bin"]


def test_context_manager_marks_failed_and_reraises(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="model server\nwent away"):
        with BundleWriter(tmp_path, small_config(), run_id="r1") as writer:
            writer.write_personas(personas())
            raise RuntimeError("model server\nwent away")
    bundle = Bundle.open(tmp_path / "r1")
    assert bundle.status == "failed" and not bundle.is_complete
    assert bundle.manifest["error"] == "RuntimeError: model server went away"
    assert "personas.parquet" in bundle.manifest["files"]


def test_a_failed_run_records_whether_a_resume_can_finish_it(tmp_path: Path) -> None:
    """`resumable` stands in a failed run's manifest beside its error (True for any failure,
    False when the RoundFailedError says a resume would replay the same prompts), is read back
    as `Bundle.resumable`, and goes when a resume marks the run running again."""
    replayed = RoundFailedError("round 1: prompts too long", resumable=False)
    for run_id, error, expected in (("r1", RuntimeError("gone"), True), ("r2", replayed, False)):
        with pytest.raises(type(error)):
            with BundleWriter(tmp_path, small_config(), run_id=run_id):
                raise error
        manifest = json.loads((tmp_path / run_id / "manifest.json").read_text(encoding="utf-8"))
        assert manifest["status"] == "failed" and manifest["resumable"] is expected
        assert Bundle.open(tmp_path / run_id).resumable is expected
    BundleWriter.reopen(tmp_path / "r1").close()
    assert "resumable" not in Bundle.open(tmp_path / "r1").manifest
    with BundleWriter(tmp_path, small_config(), run_id="r3"):
        pass
    assert "resumable" not in Bundle.open(tmp_path / "r3").manifest
    assert Bundle.open(tmp_path / "r3").resumable is None


def test_context_manager_keyboard_interrupt_marks_cancelled(tmp_path: Path) -> None:
    with pytest.raises(KeyboardInterrupt):
        with BundleWriter(tmp_path, small_config(), run_id="r1"):
            raise KeyboardInterrupt
    bundle = Bundle.open(tmp_path / "r1")
    assert bundle.status == "cancelled"
    assert bundle.manifest["error"] == "KeyboardInterrupt"


def test_context_manager_clean_exit_completes(tmp_path: Path) -> None:
    with BundleWriter(tmp_path, small_config(), run_id="r1") as writer:
        write_two_rounds(writer)
    assert Bundle.open(tmp_path / "r1").status == "complete"
    with BundleWriter(tmp_path, small_config(), run_id="r2") as writer:
        writer.finish("cancelled")
    assert Bundle.open(tmp_path / "r2").status == "cancelled"


def test_abandoned_writer_reads_as_dead(tmp_path: Path) -> None:
    writer = BundleWriter(tmp_path, small_config(), run_id="r1")
    write_two_rounds(writer)
    writer.write_responses(3, 0, responses(3, [0, 1], [1.0, 2.0]))
    assert Bundle.open(tmp_path / "r1").status == "running"  # its writer lives
    del writer  # the process was killed: finish() never runs
    bundle = Bundle.open(tmp_path / "r1")
    assert bundle.recorded_status == "running"  # the manifest cannot know
    assert bundle.status == "dead" and not bundle.is_complete  # its writer is gone
    assert bundle.manifest["finished_at"] is None and bundle.manifest["files"] == {}
    assert bundle.rounds_count == 2 and len(bundle.rounds()) == 2
    assert len(bundle.responses(3)) == 2


# --------------------------------------------------------------------------- secrets


def test_redact_nested() -> None:
    data = {
        "model": {
            "api_key": SECRET,
            "apiKey": SECRET,
            "APIKEY": SECRET,
            "max_tokens": 8,
            "endpoints": [{"url": "http://x", "headers": {"Authorization": f"Bearer {SECRET}"}}],
            "hf_token": SECRET,
            "client_secret": SECRET,
            "db_password": SECRET,
            "unset_api_key": None,
        },
        "prompt_tokens": 3,
    }
    clean = redact(data)
    assert SECRET not in json.dumps(clean)
    assert clean["model"]["api_key"] == "***REDACTED***"
    assert clean["model"]["endpoints"][0]["headers"]["Authorization"] == "***REDACTED***"
    assert clean["model"]["max_tokens"] == 8 and clean["prompt_tokens"] == 3
    assert clean["model"]["unset_api_key"] is None
    assert data["model"]["api_key"] == SECRET  # a copy: the input is untouched


def test_secrets_never_reach_the_bundle(tmp_path: Path) -> None:
    writer = BundleWriter(
        tmp_path,
        small_config(),
        run_id="r1",
        model={"identity": "server", "api_key": SECRET, "headers": {"Authorization": SECRET}},
        versions={"engine": {"token": SECRET}},
    )
    writer.record(cluster={"password": SECRET})
    writer.finish()
    for path in (tmp_path / "r1").rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    assert Bundle.open(tmp_path / "r1").manifest["model"]["api_key"] == "***REDACTED***"


# --------------------------------------------------------------------------- opening


def test_open_missing_dir(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match=r"manifest\.json: not a result bundle \(no such dir"):
        Bundle.open(tmp_path / "nope")


def test_open_dir_without_manifest(tmp_path: Path) -> None:
    with pytest.raises(BundleError, match=r"not a result bundle \(manifest\.json is missing\)"):
        Bundle.open(tmp_path)


def test_open_garbage_manifest(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(BundleError, match=r"not a result bundle \(invalid JSON"):
        Bundle.open(tmp_path)
    (tmp_path / "manifest.json").write_text('{"schema_version": 99}')
    with pytest.raises(BundleError, match=r"schema_version 99, expected 1"):
        Bundle.open(tmp_path)
    (tmp_path / "manifest.json").write_text("[1, 2]")
    with pytest.raises(BundleError, match="expected a JSON object"):
        Bundle.open(tmp_path)


def test_missing_or_corrupt_parquet_names_the_file(tmp_path: Path) -> None:
    writer = BundleWriter(tmp_path, small_config(), run_id="r1")
    write_two_rounds(writer)
    writer.finish()
    bundle = Bundle.open(writer.path)
    (writer.path / "personas.parquet").unlink()
    with pytest.raises(BundleError, match=r"personas\.parquet: missing"):
        bundle.personas()
    (writer.path / "rounds.parquet").write_bytes(b"PAR1 garbage")
    with pytest.raises(BundleError, match=r"rounds\.parquet: not a readable Parquet file"):
        bundle.rounds()


# --------------------------------------------------------------------------- listing


def test_list_bundles(tmp_path: Path) -> None:
    empty = list_bundles(tmp_path / "absent")
    assert empty.empty and list(empty.columns) == [
        "run_id",
        "status",
        "model",
        "created_at",
        "n_agents",
        "rounds_done",
        "fork_of",
        "path",
        "problem",
    ]
    policy = {"engine": "none", "policy": "level_k"}
    with BundleWriter(tmp_path, small_config(), run_id="a", model=policy) as writer:
        write_two_rounds(writer)
    model = {"engine": "llama.cpp", "name": "SmolLM2-135M"}
    live = BundleWriter(tmp_path, small_config(), run_id="b", model=model)  # still running
    (tmp_path / "not-a-bundle").mkdir()
    (tmp_path / "stray.txt").write_text("hello")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "manifest.json").write_text("nope")

    listing = list_bundles(tmp_path)
    broken = listing.iloc[-1]  # listed, never hidden: why it reads unknown beside it
    assert broken["path"] == str(tmp_path / "broken") and "invalid JSON" in broken["problem"]
    assert broken["run_id"] == broken["status"] == broken["model"] == "unknown"
    listing = listing.iloc[:-1]
    assert listing["problem"].isna().all()
    assert listing["run_id"].tolist() == ["a", "b"]
    assert listing["status"].tolist() == ["complete", "running"]
    assert listing["model"].tolist() == ["level_k (policy)", "SmolLM2-135M"]  # never NaN
    assert listing["n_agents"].tolist() == [4, 4]
    assert listing["rounds_done"].tolist() == [2, 0]
    assert listing["fork_of"].isna().all()  # no fork here (a fork's: tests/test_cli.py)
    assert listing["path"].tolist() == [str(tmp_path / "a"), str(tmp_path / "b")]
    live.close()  # given up unfinished: no one writes it any more
    assert list_bundles(tmp_path)["status"].tolist() == ["complete", "dead", "unknown"]


def test_redaction_keeps_the_name_of_the_variable_holding_a_key() -> None:
    data = redact({"model": {"api_key_env": "VLLM_KEY", "api_key": "sk-secret"}})
    assert data["model"]["api_key_env"] == "VLLM_KEY"  # resume needs the variable's name
    assert data["model"]["api_key"] == "***REDACTED***"


def test_the_workbench_version_is_recorded_once(tmp_path: Path) -> None:
    from workbench._version import __version__

    writer = BundleWriter(
        tmp_path, small_config(), run_id="r1", versions={"agent-sim-workbench": "9.9", "ray": "2"}
    )
    versions = writer.manifest["versions"]
    assert versions["workbench"] == __version__ and versions["ray"] == "2"
    assert "agent-sim-workbench" not in versions
    writer.finish()
