"""Facts kept once (issue 28): no module spells again what its home defines.

A round's context is built by `RoundContext.of`, the default results folder is
`_files.results_dir`'s, the round table's columns are `results.round_table`'s (statuses and the
resume command: tests/results/test_run_statuses.py), and every model in distribution mode records
its sampling through `NodeScorer.sampling_identity`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import workbench

SOURCE = Path(workbench.__file__).parent

FACTS = {
    "RoundContext built by hand": (re.compile(r"\bRoundContext\("), "agents/shard.py"),
    "the default results folder": (re.compile(r"""=\s*(Path\()?["']results["']"""), "_files.py"),
    "a round-table column list": (
        re.compile(r"""["'](failed|winning)["']:\s*["'](n_failed|winning_guess)["']"""),
        "results/round_table.py",
    ),
    "distribution mode's sampling record": (
        re.compile(r"""["']sampler["']:\s*SAMPLER_VERSION"""),
        "llm/distribution/scorer.py",
    ),
}


def _lines(path: Path) -> list[tuple[int, str]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [(n, line.split("#")[0]) for n, line in enumerate(lines, 1)]


@pytest.mark.parametrize("fact", sorted(FACTS))
def test_a_fact_is_written_in_its_home_only(fact: str) -> None:
    pattern, home = FACTS[fact]
    found = [
        f"{path.relative_to(SOURCE)}:{number}"
        for path in sorted(SOURCE.rglob("*.py"))
        if path != SOURCE / home
        for number, code in _lines(path)
        if pattern.search(code) and "class RoundContext" not in code
    ]
    assert found == [], fact
