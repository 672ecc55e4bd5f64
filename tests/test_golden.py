"""The golden record: the shipped examples answer, bit for bit, as recorded on the portable
build (`workbench/examples/golden.json`, `workbench.experiment.golden`).

CI machines change from run to run (AVX-512 or AVX2 only, other CPU models and core counts),
so these reruns are what proves the build portable; a failure names this build and the
record's. The README's and the docs' example output is the record's.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from workbench.experiment.golden import GOLDEN_RUNS, GoldenRun, load_record, mismatches, run_golden

pytestmark = pytest.mark.slow  # runs the embedded model

REPO = Path(__file__).resolve().parents[1]
PRINTED = (REPO / "README.md", REPO / "docs" / "getting-started.md")
"""Pages that show the main job's printed round."""


@pytest.mark.parametrize("run", GOLDEN_RUNS, ids=lambda run: run.name)
def test_the_examples_answer_as_the_golden_record(run: GoldenRun, tmp_path: Path) -> None:
    record = load_record()
    bundle = run_golden(run, tmp_path)
    problems = mismatches(run.name, bundle, record)
    assert not problems, "\n".join(problems)
    # and a difference would be told with both builds named
    moved = {**record, "runs": {run.name: {"rounds": [dict(r) for r in record["runs"][run.name]
                                                       ["rounds"]]}}}  # fmt: skip
    moved["runs"][run.name]["rounds"][0]["answers_sha256"] = "0" * 64
    (told,) = mismatches(run.name, bundle, moved)
    assert f"on this build, {record['build']['label']}; the record has 000000000000" in told


def test_the_printed_example_is_the_golden_records() -> None:
    (first,) = load_record()["runs"]["million"]["rounds"]
    for page in PRINTED:
        rows = re.findall(r"^ +1 +1000000 +1000000 .*$", page.read_text(), flags=re.M)
        assert rows, f"{page.name} shows no printed round of the main job"
        for row in rows:
            cells = row.split()
            assert f"{first['mean']:.2f}" in cells and str(first["n_winners"]) in cells, (
                f"{page.name} prints {row.strip()!r}; the golden record has mean "
                f"{first['mean']:.2f} and {first['n_winners']} winners"
            )
