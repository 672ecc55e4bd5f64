"""The golden record: what the shipped examples answer on the portable build, kept in the
repository (`workbench/examples/golden.json`).

Every machine of the portable build's baseline gives these answers bit for bit, so the record is
what proves a build portable: CI machines change from run to run, and `tests/test_golden.py`
reruns each example and fails, naming the build, when any answer differs. The README's and the
docs' example outputs are the record's numbers. After a change that is meant to move answers
(another model file, a new sampler), take the record again on the portable build with
`python -m workbench.experiment.golden --write`, and say why in the commit.
"""

from __future__ import annotations

import json
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench._examples import example_path, examples_dir
from workbench.config import apply_overrides, load_run_config
from workbench.results import Bundle
from workbench.results.reproduction import answers_digest, build_label
from workbench.runtime import Simulation

GOLDEN = examples_dir() / "golden.json"
"""Where the golden record lies (shipped with the examples it records)."""


@dataclass(frozen=True)
class GoldenRun:
    """One recorded run: a shipped example and the overrides it is run with."""

    name: str
    example: str
    overrides: dict[str, Any]


GOLDEN_RUNS: tuple[GoldenRun, ...] = (
    GoldenRun("million", "million", {}),
    GoldenRun("quickstart-1000", "quickstart", {"n_agents": 1000}),
)
"""The README's main job, and the quickstart's three rounds at 1,000 agents (its later rounds
show every agent its own history, so they walk the engine's cached pieces)."""


def run_golden(run: GoldenRun, out_dir: str | Path) -> Bundle:
    """Play one recorded run into a bundle under `out_dir`."""
    config = load_run_config(example_path(run.example))
    config = apply_overrides(config, run.overrides, f"golden run {run.name}")
    return Simulation(config).run(out_dir=out_dir, progress=False)


def describe(bundle: Bundle) -> dict[str, Any]:
    """What the record keeps of a run: per round the answers' digest, mean and winners."""
    rounds = bundle.rounds().to_dict("records")
    return {
        "rounds": [
            {
                "round": int(r["round"]),
                "answers_sha256": answers_digest(bundle, int(r["round"])),
                "mean": round(float(r["mean"]), 6),
                "n_winners": int(r["n_winners"]),
            }
            for r in rounds
        ]
    }


def load_record(path: Path = GOLDEN) -> dict[str, Any]:
    """The golden record as stored."""
    return json.loads(path.read_text())


def build_of(bundle: Bundle) -> dict[str, Any]:
    """What the record says of the build and model file that answered."""
    model = bundle.model
    build = model.get("build") if isinstance(model.get("build"), dict) else {}
    return {
        "label": build_label(model),
        "baseline": build.get("baseline"),
        "engine_version": model.get("engine_version"),
        "compiler": build.get("compiler"),
        "file": model.get("file"),
        "file_sha256": model.get("file_sha256"),
    }


def mismatches(name: str, bundle: Bundle, record: dict[str, Any]) -> list[str]:
    """How one run differs from its record (empty when every round's answers are the same),
    each line naming this build and the record's."""
    want = record["runs"][name]["rounds"]
    got = describe(bundle)["rounds"]
    here, there = build_of(bundle)["label"], record["build"]["label"]
    out = []
    for expected, found in zip(want, got, strict=False):
        if expected != found:
            out.append(
                f"{name} round {expected['round']}: answers {found['answers_sha256'][:12]} "
                f"(mean {found['mean']:.2f}, {found['n_winners']:,} winners) on this build, "
                f"{here}; the record has {expected['answers_sha256'][:12]} (mean "
                f"{expected['mean']:.2f}, {expected['n_winners']:,} winners), taken on {there}"
            )
    if len(want) != len(got):
        out.append(f"{name}: {len(got)} rounds played, the record has {len(want)}")
    return out


def take_record(out_dir: str | Path) -> dict[str, Any]:
    """Run every recorded run and gather the record (refused off the portable build)."""
    runs, build = {}, None
    for run in GOLDEN_RUNS:
        bundle = run_golden(run, out_dir)
        build = build_of(bundle)
        if not build["label"].startswith("portable"):
            raise SystemExit(f"the golden record is taken on the portable build, not {build}")
        runs[run.name] = {"example": run.example, "overrides": run.overrides, **describe(bundle)}
    return {"build": build, "runs": runs}


def main(argv: list[str]) -> int:
    """`python -m workbench.experiment.golden [--write]`: take the record, print it, and with
    --write store it."""
    with tempfile.TemporaryDirectory() as tmp:
        record = take_record(tmp)
    text = json.dumps(record, indent=1) + "\n"
    print(text, end="")
    if "--write" in argv:
        GOLDEN.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
