"""Damaged bundles and bad paths: one line naming the file or field and the fix, nothing written."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from workbench.errors import BundleError, ConfigError
from workbench.results import Bundle, BundleWriter, verify_bundle


def tree(path: Path) -> list[str]:
    return sorted(p.relative_to(path).as_posix() for p in path.rglob("*"))


def edit_manifest(bundle: Path, **changes) -> None:
    path = bundle / "manifest.json"
    path.write_text(json.dumps(json.loads(path.read_text()) | changes))


# --------------------------------------------------------------------------- listed files only


def test_an_injected_part_file_is_ignored_and_named(tmp_path: Path, write_honest_bundle) -> None:
    path = write_honest_bundle(tmp_path)
    before = Bundle.open(path).responses()
    rogue = pq.read_table(path / "responses/round-1/part-00000.parquet")
    pq.write_table(rogue, path / "responses/round-1/part-00002.parquet")
    pq.write_table(rogue, path / "responses/round-1/part-00003.parquet")
    bundle = Bundle.open(path)
    pd.testing.assert_frame_equal(bundle.responses(), before)
    assert len(bundle.response_files(1)) == 2
    problems = verify_bundle(path).problems
    assert problems == [
        "responses/round-1/part-00002.parquet: data file not listed in the manifest",
        "responses/round-1/part-00003.parquet: data file not listed in the manifest",
    ]


def test_a_live_bundle_reads_what_is_there(tmp_path: Path, write_honest_bundle) -> None:
    path = write_honest_bundle(tmp_path, finish=False)
    rogue = pq.read_table(path / "responses/round-1/part-00000.parquet")
    pq.write_table(rogue, path / "responses/round-1/part-00002.parquet")
    assert len(Bundle.open(path).responses(1)) == 6  # no file list yet to hold it against


def test_an_unlisted_table_is_not_read(tmp_path: Path, config) -> None:
    writer = BundleWriter(tmp_path, config, run_id="r1")
    writer.finish("failed", error="died before the personas")
    pd.DataFrame({"agent_id": [0]}).to_parquet(writer.path / "personas.parquet")
    with pytest.raises(BundleError, match=r"personas\.parquet: not listed in the manifest"):
        Bundle.open(writer.path).personas()
    pd.DataFrame({"round": [1]}).to_parquet(writer.path / "groups.parquet")
    assert Bundle.open(writer.path).groups().empty


# --------------------------------------------------------------------------- symbolic links


def test_a_symlinked_file_is_refused_by_verify_and_the_reader(
    tmp_path: Path, write_honest_bundle
) -> None:
    path = write_honest_bundle(tmp_path)
    part = path / "responses/round-2/part-00001.parquet"
    outside = tmp_path / "outside.parquet"
    part.rename(outside)
    part.symlink_to(outside)  # same bytes, so the hash would even agree
    report = verify_bundle(path)
    assert report.problems == [
        "responses/round-2/part-00001.parquet: is a symbolic link; a bundle holds plain files "
        "only (not followed)"
    ]
    with pytest.raises(BundleError, match=r"part-00001\.parquet: is a symbolic link") as caught:
        Bundle.open(path).responses()
    assert "\n" not in str(caught.value)


def test_a_symlinked_folder_is_refused(tmp_path: Path, write_honest_bundle) -> None:
    path = write_honest_bundle(tmp_path)
    (path / "responses").rename(tmp_path / "elsewhere")
    (path / "responses").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    problems = verify_bundle(path).problems
    assert problems[0] == (
        "responses: is a symbolic link; a bundle holds plain files only (not followed)"
    )
    assert len(problems) == 1
    with pytest.raises(BundleError, match="responses: is a symbolic link"):
        Bundle.open(path).responses()


def test_a_symlinked_manifest_is_refused(tmp_path: Path, write_honest_bundle) -> None:
    path = write_honest_bundle(tmp_path)
    (path / "manifest.json").rename(tmp_path / "manifest.json")
    (path / "manifest.json").symlink_to(tmp_path / "manifest.json")
    with pytest.raises(BundleError, match=r"manifest\.json: is a symbolic link"):
        verify_bundle(path)


# --------------------------------------------------------------------------- each problem once


def test_verify_reports_each_problem_once(tmp_path: Path, write_honest_bundle) -> None:
    path = write_honest_bundle(tmp_path)
    rounds = pd.read_parquet(path / "rounds.parquet")
    doubled = pd.concat([rounds, rounds[rounds["round"] == 1]], ignore_index=True)
    doubled.loc[doubled["round"] == 1, "mean"] += 1.0  # two rows say the same wrong thing
    doubled.to_parquet(path / "rounds.parquet", index=False)
    report = verify_bundle(path)
    assert len(report.problems) == len(set(report.problems))
    wrong_mean = [p for p in report.problems if p.startswith("rounds.parquet round 1: mean")]
    assert len(wrong_mean) == 1
    text = str(report)
    assert all(text.count(p) == 1 for p in report.problems)
    assert text.splitlines()[0].endswith(f"{len(report.problems)} problem(s)")


# --------------------------------------------------------------------------- damaged manifests


@pytest.mark.parametrize(
    ("field", "value", "read"),
    [
        ("run_id", 7, lambda b: b.run_id),
        ("status", ["complete"], lambda b: b.status),
        ("status", "exploded", lambda b: b.status),
        ("created_at", 3.5, lambda b: b.created_at),
        ("finished_at", {"at": 1}, lambda b: b.finished_at),
        ("error", 12, lambda b: b.error),
        ("model", "llama", lambda b: b.model),
        ("rounds", "three", lambda b: b.rounds_count),
        ("rounds", [1, 2], lambda b: b.rounds_done),
        ("files", ["a"], lambda b: b.responses()),
        ("config", "n_agents: 4", lambda b: b.config),
    ],
)
def test_wrong_typed_manifest_fields_give_one_line(
    tmp_path: Path, write_honest_bundle, field, value, read
):
    path = write_honest_bundle(tmp_path)
    edit_manifest(path, **{field: value})
    bundle = Bundle.open(path)
    with pytest.raises(BundleError) as caught:
        read(bundle)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"{path / 'manifest.json'}: field {field!r} must be ")
    assert message.endswith("the bundle is damaged - rerun or restore it")


def test_the_rounds_field_message(tmp_path: Path, write_honest_bundle) -> None:
    path = write_honest_bundle(tmp_path)
    edit_manifest(path, rounds="three")
    with pytest.raises(BundleError, match="field 'rounds' must be a list, got str; the bundle"):
        _ = Bundle.open(path).rounds_count


def test_typed_accessors(tmp_path: Path, write_honest_bundle) -> None:
    bundle = Bundle.open(write_honest_bundle(tmp_path))
    assert isinstance(bundle.created_at, str) and isinstance(bundle.finished_at, str)
    assert bundle.error is None and bundle.model == {} and bundle.is_finished
    assert [r["round"] for r in bundle.rounds_done] == [1, 2]


def test_a_damaged_field_is_listed_as_unknown_with_its_problem(
    tmp_path: Path, write_honest_bundle
) -> None:
    """`list_bundles` never hides a bundle: a field its manifest does not hold readably reads
    unknown, `problem` says which and why; a manifest that does not read at all is listed too."""
    from workbench.results import list_bundles

    write_honest_bundle(tmp_path, "good")
    edit_manifest(write_honest_bundle(tmp_path, "bad"), model="smollm2", rounds="three")
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "manifest.json").write_text("{not json", encoding="utf-8")
    (tmp_path / "figures").mkdir()  # no manifest: not a bundle
    listed = list_bundles(tmp_path).set_index("path")
    assert sorted(Path(p).name for p in listed.index) == ["bad", "good", "junk"]
    good, bad, junk = (listed.loc[str(tmp_path / name)] for name in ("good", "bad", "junk"))
    assert pd.isna(good["problem"]) and good["status"] == "complete"
    assert bad["run_id"] == "bad" and bad["status"] == "complete"
    assert bad["model"] == "unknown" and bad["rounds_done"] == "unknown"
    assert bad["problem"] == "model must be an object, got str; rounds must be a list, got str"
    assert junk["run_id"] == junk["status"] == "unknown" and "invalid JSON" in junk["problem"]


def test_bundles_list_shows_a_bundle_whose_model_is_plain_text(
    tmp_path: Path, write_honest_bundle
) -> None:
    """`workbench bundles list` shows it, its model unknown and the problem beside it."""
    from cli_helpers import in_process

    write_honest_bundle(tmp_path, "good")
    edit_manifest(write_honest_bundle(tmp_path, "bad"), model="smollm2")
    result = in_process(["bundles", "list", tmp_path], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    header, *lines = result.stdout.splitlines()
    assert header.split()[-1] == "problem" and len(lines) == 2
    (bad,) = [line for line in lines if str(tmp_path / "bad") in line]
    assert " unknown " in bad and bad.endswith("model must be an object, got str")


# --------------------------------------------------------------------------- bad output paths


def test_out_dir_that_is_a_file_is_refused_before_writing(tmp_path: Path, config) -> None:
    target = tmp_path / "results.txt"
    target.write_text("not a folder")
    with pytest.raises(ConfigError) as caught:
        BundleWriter(target, config, run_id="r1")
    message = str(caught.value)
    assert message == (f"--out / output.dir: {target} is a file; choose a folder for the results")
    below = target / "below" / "deeper"
    with pytest.raises(ConfigError) as caught:
        BundleWriter(below, config, run_id="r1")
    assert str(caught.value) == (
        f"--out / output.dir: {below} lies below {target}, which is a file; choose a folder "
        "for the results"
    )
    assert tree(tmp_path) == ["results.txt"] and target.read_text() == "not a folder"


def test_a_run_id_too_long_for_the_file_system_is_refused(tmp_path: Path, config) -> None:
    limit = os.pathconf(tmp_path, "PC_NAME_MAX")
    with pytest.raises(ConfigError) as caught:
        BundleWriter(tmp_path / "results", config, run_id="r" * (limit + 1))
    message = str(caught.value)
    assert message.startswith("name / run id: rrrr") and "\n" not in message
    assert f"{limit + 1} bytes, more than the {limit}" in message
    long_name = config.model_copy(update={"name": "n" * limit})
    with pytest.raises(ConfigError, match="use a shorter name"):
        BundleWriter(tmp_path / "results", long_name)
    assert tree(tmp_path) == []
    BundleWriter(tmp_path / "results", config, run_id="r" * limit).finish()  # the limit itself
