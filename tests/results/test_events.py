"""Events in the bundle: appended as JSON lines while the run goes, hashed when it ends."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from workbench.errors import BundleError, ContractError
from workbench.results import Bundle, BundleWriter, read_events, verify_bundle

SECRET = "sk-live-0123456789abcdef"


def test_append_and_read_back(tmp_path: Path, config) -> None:
    writer = BundleWriter(tmp_path, config, run_id="r1")
    writer.append_event({"kind": "run_started", "bundle": writer.path, "n": 4})
    writer.append_event({"kind": "shard_progress", "mean": float("nan"), "api_key": SECRET})
    assert Bundle.open(writer.path).events() == [
        {"kind": "run_started", "bundle": str(writer.path), "n": 4},
        {"kind": "shard_progress", "mean": None, "api_key": "***REDACTED***"},
    ]
    lines = (writer.path / "events.jsonl").read_text().splitlines()
    assert lines[0] == json.dumps(json.loads(lines[0]), separators=(",", ":"))  # compact
    assert SECRET not in (writer.path / "events.jsonl").read_text()
    with pytest.raises(ContractError, match="must be a mapping"):
        writer.append_event(["not", "a", "mapping"])  # type: ignore[arg-type]
    writer.finish()


def test_a_bundle_without_events_reads_none(tmp_path: Path, config) -> None:
    writer = BundleWriter(tmp_path, config, run_id="r1")
    assert Bundle.open(writer.path).events() == []
    writer.finish()
    assert Bundle.open(writer.path).events() == []
    assert read_events(writer.path) == ([], 0)


def test_partial_last_line_is_skipped_and_offsets_follow(tmp_path: Path, config) -> None:
    writer = BundleWriter(tmp_path, config, run_id="r1")
    writer.append_event({"i": 0})
    writer.append_event({"i": 1})
    path = writer.path / "events.jsonl"
    events, offset = read_events(writer.path)
    assert [e["i"] for e in events] == [0, 1] and offset == path.stat().st_size
    assert read_events(path, offset) == ([], offset)  # nothing new

    with path.open("ab") as handle:  # a live writer, caught mid-append
        handle.write(b'{"i": 2, "half')
    assert [e["i"] for e in Bundle.open(writer.path).events()] == [0, 1]
    assert read_events(path, offset) == ([], offset)
    with path.open("ab") as handle:
        handle.write(b'": true}\n{"i": 3}\n')
    events, later = read_events(path, offset)
    assert events == [{"i": 2, "half": True}, {"i": 3}] and later == path.stat().st_size
    with pytest.raises(ValueError, match="offset"):
        read_events(path, -1)


def test_a_damaged_complete_line_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    path.write_text('{"i": 0}\nnot json\n')
    with pytest.raises(BundleError, match=r"events\.jsonl: the line at byte 9 is not JSON"):
        read_events(path)


def test_events_from_many_threads_are_whole_lines(tmp_path: Path, config) -> None:
    writer = BundleWriter(tmp_path, config, run_id="r1")

    def shard(index: int) -> None:
        for i in range(50):
            writer.append_event({"shard": index, "i": i, "text": "x" * 500})

    threads = [threading.Thread(target=shard, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    writer.finish(event={"kind": "run_finished"})
    events = Bundle.open(writer.path).events()
    assert len(events) == 401 and events[-1] == {"kind": "run_finished"}
    assert sorted((e["shard"], e["i"]) for e in events[:-1]) == [
        (k, i) for k in range(8) for i in range(50)
    ]


def test_finish_event_is_hashed_and_verified(tmp_path: Path, config, play_rounds) -> None:
    writer = BundleWriter(tmp_path, config, run_id="r1")
    writer.append_event({"kind": "run_started"})
    play_rounds(writer)
    writer.finish("complete", event={"kind": "run_finished", "status": "complete"})
    with pytest.raises(BundleError, match="already finished"):
        writer.append_event({"kind": "late"})
    entry = writer.manifest["files"]["events.jsonl"]
    assert entry["rows"] == 2 and entry["bytes"] == (writer.path / "events.jsonl").stat().st_size
    assert Bundle.open(writer.path).events()[-1]["status"] == "complete"
    report = verify_bundle(writer.path)
    assert report.ok, report.problems

    path = writer.path / "events.jsonl"
    path.write_text(path.read_text().replace("complete", "failed!!"))  # same size, one line
    problems = verify_bundle(writer.path).problems
    assert problems == [
        "events.jsonl: sha256 differs from the manifest (changed after the run; "
        f"{entry['bytes']} bytes, manifest says {entry['bytes']})"
    ]


def test_verify_counts_jsonl_rows_as_lines(tmp_path: Path, config) -> None:
    writer = BundleWriter(tmp_path, config, run_id="r1")
    writer.finish(event={"kind": "run_finished"})
    manifest_path = writer.path / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["files"]["events.jsonl"]["rows"] = 5
    manifest_path.write_text(json.dumps(manifest))
    assert "events.jsonl: 1 rows, manifest says 5" in verify_bundle(writer.path).problems


def test_an_injected_events_file_is_ignored_once_finished(tmp_path: Path, config) -> None:
    writer = BundleWriter(tmp_path, config, run_id="r1")
    writer.finish()
    (writer.path / "events.jsonl").write_text('{"kind": "run_finished", "status": "complete"}\n')
    assert Bundle.open(writer.path).events() == []
    assert "events.jsonl: file not listed in the manifest" in verify_bundle(writer.path).problems


def test_reopen_keeps_the_events_and_drops_a_partial_line(tmp_path: Path, config) -> None:
    writer = BundleWriter(tmp_path, config, run_id="r1")
    writer.append_event({"i": 0})
    writer.finish("cancelled", event={"i": 1})
    with (writer.path / "events.jsonl").open("ab") as handle:
        handle.write(b'{"i": ')  # what a killed resume left
    resumed = BundleWriter.reopen(writer.path)
    resumed.append_event({"i": 2})
    resumed.finish(event={"i": 3})
    assert [e["i"] for e in Bundle.open(writer.path).events()] == [0, 1, 2, 3]
    assert verify_bundle(writer.path).ok
