"""`workbench bundles reproduce`: a bundle's config run again here and compared answer by answer.

The real path runs the embedded model twice. A bundle made on another machine cannot be made in
CI, so one test copies a real bundle and rewrites what another build would have left in it (an
answer, and the manifest's record of the build): the comparison and the cause are then real.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.cli_helpers import assert_user_error, in_process
from workbench.experiment import configure, reproduce
from workbench.experiment.reproduce import _refuse_ungranted_keys
from workbench.llm.key_policy import KeyPolicy
from workbench.results import Bundle
from workbench.results.layout import MANIFEST
from workbench.runtime import Simulation

pytestmark = pytest.mark.slow  # runs the embedded model

NATIVE_AVX512 = (
    "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX_VNNI = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | "
    "BMI2 = 1 | AVX512 = 1 | AVX512_VBMI = 1 | AVX512_VNNI = 1 | LLAMAFILE = 1 | OPENMP = 1 | "
    "REPACK = 1"
)
"""What a native build on an AVX-512 machine of this kind reports (`built_for`)."""


@pytest.fixture(scope="module")
def made(tmp_path_factory) -> Bundle:
    """24 persona agents, 2 rounds of the quickstart's game on the embedded model."""
    config = configure("quickstart", {"name": "repro", "n_agents": 24, "game.rounds": 2})
    return Simulation(config).run(out_dir=tmp_path_factory.mktemp("made"), progress=False)


def test_a_bundle_made_here_reproduces_identically(made: Bundle, tmp_path: Path) -> None:
    result = reproduce(made, out_dir=tmp_path)
    assert result.identical, str(result)
    assert [r.identical for r in result.rounds] == [24, 24]
    assert result.again.path.parent == tmp_path and result.again.path != made.path
    assert result.verdict().startswith("identical: all 48 answers of 2 round(s)")
    cli = in_process(["bundles", "reproduce", made.path, "--rounds", "1", "--out", tmp_path,
                      "--no-progress"], cwd=tmp_path)  # fmt: skip
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert cli.stdout.strip().splitlines()[-1].startswith("identical: all 24 answers of 1 round")


def _as_if_made_elsewhere(made: Bundle, where: Path, model: dict) -> Path:
    """A copy of `made` whose agent 3 answered otherwise in round 1 and whose manifest records
    `model` (another build) as what answered."""
    copy = where / "elsewhere"
    shutil.copytree(made.path, copy)
    for part in sorted((copy / "responses").glob("round-1/*.parquet")):
        table = pq.read_table(part)
        ids = table.column("agent_id").to_pylist()
        if 3 in ids:
            guesses = table.column("guess").to_pylist()
            guesses[ids.index(3)] = 99.0 if guesses[ids.index(3)] != 99.0 else 98.0
            index = table.schema.get_field_index("guess")
            table = table.set_column(index, "guess", pa.array(guesses, pa.float64()))
            pq.write_table(table, part)
    manifest = json.loads((copy / MANIFEST).read_text())
    manifest["model"] = model
    (copy / MANIFEST).write_text(json.dumps(manifest))
    return copy


@pytest.mark.parametrize("old", [False, True], ids=["native-build", "before-builds-recorded"])
def test_a_bundle_of_another_build_differs_and_the_build_is_named(
    made: Bundle, tmp_path: Path, old: bool
) -> None:
    model = {k: v for k, v in made.model.items() if k != "build"}
    if old:  # bundles of earlier versions recorded the features only (every build was native)
        model["built_for"] = NATIVE_AVX512
    else:
        model["build"] = {"build": "native", "baseline": "native-1234", "built_for": NATIVE_AVX512}
    elsewhere = _as_if_made_elsewhere(made, tmp_path, model)
    shown = in_process(["bundles", "show", elsewhere], cwd=tmp_path)
    assert "build:   native" in shown.stdout
    assert ("made before builds were recorded" in shown.stdout) is old
    cli = in_process(["bundles", "reproduce", elsewhere, "--out", tmp_path / "again",
                      "--no-progress"], cwd=tmp_path)  # fmt: skip
    assert cli.returncode == 1, cli.stdout + cli.stderr
    verdict = cli.stdout.strip().splitlines()[-1]
    assert verdict.startswith("differs: round 1: 23 of 24 answers identical, first at agent 3")
    assert "cause: llama.cpp build: native" in verdict and "-> portable (x86-64-v3)" in verdict
    assert "only then AVX512" in verdict
    assert "round 1 group mean shifts:" in cli.stdout  # each group's mean shift is shown


def test_rounds_out_of_range_are_refused_naming_the_option(made: Bundle, tmp_path: Path) -> None:
    result = in_process(["bundles", "reproduce", made.path, "--rounds", "3"], cwd=tmp_path)
    assert_user_error(result, "--rounds", "between 1 and the 2 round(s)")
    assert not any(tmp_path.iterdir())  # nothing run, nothing written


def test_a_bundles_config_never_chooses_where_a_key_goes(
    made: Bundle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bundle from elsewhere whose config would send a key variable to its own host: refused
    before anything runs, naming the grant; the grant lifts the refusal."""
    monkeypatch.setenv("SOME_SECRET", "s3cret")
    copy = tmp_path / "served"
    shutil.copytree(made.path, copy)
    manifest = json.loads((copy / MANIFEST).read_text())
    manifest["config"]["model"] = {
        "kind": "openai",
        "name": "m",
        "base_urls": ["http://127.0.0.1:9/v1"],
        "api_key_env": "SOME_SECRET",
    }
    (copy / MANIFEST).write_text(json.dumps(manifest))
    out = tmp_path / "out"
    refused = in_process(["bundles", "reproduce", copy, "--out", out], cwd=tmp_path)
    assert_user_error(refused, "model.api_key_env", "'SOME_SECRET'", "127.0.0.1:9",
                      "--allow-key-env SOME_SECRET=127.0.0.1:9")  # fmt: skip
    assert not out.exists()  # nothing ran, nothing was sent
    grant = KeyPolicy.parse(["SOME_SECRET=127.0.0.1:9"])
    _refuse_ungranted_keys(Bundle.open(copy).config, grant)  # granted: no refusal
