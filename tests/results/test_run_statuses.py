"""A run's statuses and the resume command have one home, `workbench.results.run_statuses`."""

from __future__ import annotations

import json
import re
from pathlib import Path

import workbench
from workbench.errors import NO_RESUME
from workbench.results.run_statuses import (
    FINISH_STATUSES,
    MANIFEST_STATUSES,
    RunStatus,
    can_resume,
    resume_command,
    resume_hint,
)

SOURCE = Path(workbench.__file__).parent
HOME = SOURCE / "results" / "run_statuses.py"
WORDS = "running|complete|failed|cancelled|dead|unknown"
BARE_STATUS = re.compile(rf"""status\W*\s*(==|!=|=|:|in|not in)\s*\(?["']({WORDS})["']""")
"""A status compared or set as a bare word (what `RunStatus` and `UNKNOWN` replace)."""


def test_statuses_know_what_they_allow() -> None:
    assert [s.value for s in RunStatus] == ["running", "complete", "failed", "cancelled", "dead"]
    assert [s for s in RunStatus if s.is_final] == [
        RunStatus.COMPLETE,
        RunStatus.FAILED,
        RunStatus.CANCELLED,
        RunStatus.DEAD,
    ]
    assert {s for s in RunStatus if s.resumable} == {"failed", "cancelled", "dead"}
    assert MANIFEST_STATUSES == ("running", "complete", "failed", "cancelled")
    assert FINISH_STATUSES == ("complete", "failed", "cancelled")
    assert RunStatus.of("dead") is RunStatus.DEAD and RunStatus.of("unknown") is None
    assert RunStatus.of(["running"]) is None  # a damaged manifest's field


def test_a_status_stays_its_plain_word_in_json_and_text() -> None:
    assert json.dumps({"status": RunStatus.FAILED}) == '{"status": "failed"}'
    assert f"{RunStatus.DEAD}" == "dead" and RunStatus.COMPLETE == "complete"


def test_the_resume_hint_is_judged_once(tmp_path: Path) -> None:
    bundle = tmp_path / "run-1"
    command = f"workbench run --resume {bundle}"
    assert resume_command(bundle) == command
    assert resume_hint("failed", "boom", bundle) == command
    assert resume_hint(RunStatus.DEAD, None, bundle) == command
    assert resume_hint("complete", None, bundle) is None
    assert resume_hint("running", None, bundle) is None
    assert resume_hint("unknown", None, bundle) is None
    assert resume_hint("failed", "too long", bundle, resumable=False) is None
    said = f"round 2 failed; once its cause is fixed: {command}"
    assert resume_hint("failed", said, bundle) == command
    assert resume_hint("failed", said, bundle, unless_said=True) is None


def test_whether_a_run_can_resume_is_read_from_its_manifest_field() -> None:
    """The manifest's `resumable` decides for a failed run; a bundle written before the field
    falls back to its error's text (NO_RESUME), and no status a resume cannot finish resumes."""
    assert can_resume("failed", True, f"said anyway: {NO_RESUME}")  # the field, not the text
    assert not can_resume("failed", False, "round 1: 4 of 4 answers failed")
    assert can_resume("failed", None, "boom") and can_resume("cancelled") and can_resume("dead")
    assert not can_resume("failed", None, f"too long; {NO_RESUME}")  # an old bundle
    assert not can_resume("complete", True) and not can_resume("running")
    assert not can_resume("unknown", True)


def test_no_status_word_or_resume_command_is_written_twice() -> None:
    """Outside their home, statuses are `RunStatus` members (a status not known `UNKNOWN`) and
    the resume command is `resume_command`'s: no module spells either again."""
    found = []
    for path in sorted(SOURCE.rglob("*.py")):
        if path == HOME:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#")[0]
            if BARE_STATUS.search(code) or "run --resume {" in code or "--resume)" in code:
                found.append(f"{path.relative_to(SOURCE)}:{number}: {line.strip()}")
    assert found == []
