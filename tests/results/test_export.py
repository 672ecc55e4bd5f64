"""The tidy export (`results.export`, `workbench bundles export`): one row per agent and finished
round, the persona columns beside each answer, read back from CSV and Parquet equal to the
bundle's own answers and personas; a guess that is not a number is empty, never "nan"."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from cli_helpers import in_process

import workbench
from workbench.game import round_stats
from workbench.results import Bundle, BundleWriter
from workbench.results.export import export_tidy, tidy_table
from workbench.runtime import Simulation

COLUMNS = ["run_id", "round", "agent_id", "gender", "education", "guess", "status", "latency_s",
           "prompt_tokens", "completion_tokens"]  # fmt: skip


@pytest.fixture
def level_k(make_config, tmp_path: Path) -> Bundle:
    """A real run: 30 level-k agents of the education population, three rounds, four shards."""
    config = make_config(policy={"kind": "level_k", "noise_sd": 4.0}, n_agents=30, rounds=3,
                         agents_per_shard=8)  # fmt: skip
    return Simulation(config).run(out_dir=tmp_path / "results", progress=False)


def expected(bundle: Bundle) -> pd.DataFrame:
    """The bundle's answers joined to its personas, as the tidy table must hold them."""
    personas = bundle.personas()[["agent_id", "gender", "education"]]
    answers = bundle.responses().merge(personas, on="agent_id", how="left")
    return answers.assign(run_id=bundle.run_id)[COLUMNS].reset_index(drop=True)


def read(path: Path) -> pd.DataFrame:
    """An exported file read back as R or Stata would: CSV as text, Parquet as typed."""
    if path.suffix == ".csv":
        return pd.read_csv(path, keep_default_na=False, na_values=[""])
    return pd.read_parquet(path)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_one_row_per_agent_and_round_with_the_persona_columns(level_k, tmp_path, fmt) -> None:
    out = tmp_path / f"tidy.{fmt}"
    rows = export_tidy(level_k, out)
    assert rows == 30 * 3
    table = read(out)
    assert list(table.columns) == COLUMNS
    assert len(table) == 90 and not table.duplicated(["round", "agent_id"]).any()
    want = expected(level_k)
    for column in COLUMNS:
        if pd.api.types.is_numeric_dtype(want[column]):
            assert np.allclose(table[column], want[column], rtol=0, atol=1e-9), column
        else:
            assert table[column].astype(str).tolist() == want[column].astype(str).tolist(), column
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".part")]  # nothing left over


def test_a_failed_answer_is_empty_and_only_finished_rounds_are_written(make_config, tmp_path):
    config = make_config(n_agents=3, rounds=2)
    writer = BundleWriter(tmp_path, config, run_id="live")
    writer.write_personas(pd.DataFrame({"agent_id": [0, 1, 2], "education": ["a", "b", "a"]}))
    guesses = np.array([10.0, np.nan, 30.0])
    status = ["ok", "no_number", "ok"]
    writer.write_responses(1, 0, pd.DataFrame({"agent_id": [0, 1, 2], "guess": guesses,
                                               "status": status}))  # fmt: skip
    stats = round_stats(guesses, np.array([True, False, True]), config.game)
    writer.end_round({"round": 1, **stats.as_dict(), "seconds": 0.0})
    writer.write_responses(2, 0, pd.DataFrame({"agent_id": [0], "guess": [5.0], "status": "ok"}))
    bundle = Bundle.open(writer.path)  # round 2 still playing: not exported
    out = tmp_path / "live.csv"
    assert export_tidy(bundle, out) == 3
    lines = out.read_text().splitlines()
    assert lines[2].split(",")[4:6] == ["", '"no_number"'], lines  # empty, not nan
    assert tidy_table(bundle)["guess"].isna().tolist() == [False, True, False]
    writer.close()


def test_the_cli_and_the_package_face(level_k, tmp_path) -> None:
    assert workbench.export_tidy is export_tidy
    done = in_process(["bundles", "export", level_k.path], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    default = tmp_path / f"{level_k.run_id}-tidy.csv"
    assert done.stdout.strip() == f"wrote 90 rows (3 rounds) to {default.name}"
    assert read(default).shape == (90, len(COLUMNS))
    parquet = in_process(["bundles", "export", level_k.path, "--out", "x/t.parquet"], cwd=tmp_path)
    assert parquet.returncode == 0 and read(tmp_path / "x" / "t.parquet").shape == (90, 10)
    clash = in_process(["bundles", "export", level_k.path, "--out", "t.parquet", "--format", "csv"],
                       cwd=tmp_path)  # fmt: skip
    assert clash.returncode == 2 and "--format csv but --out ends in .parquet" in clash.stderr
    bad = in_process(["bundles", "export", level_k.path, "--format", "dta"], cwd=tmp_path)
    assert bad.returncode == 2 and "--format: 'dta' is not an export format" in bad.stderr
    assert not (tmp_path / "t.parquet").exists()
