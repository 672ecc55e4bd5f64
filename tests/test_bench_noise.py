"""`workbench bench noise` (issue 27, item 1): the quickstart's round 1 under two evaluations.

Both walks give whole distributions (each group's shares sum to 1); the one-batch evaluation is
really another one here (llama.cpp's batch numerics move some answer's probability); its
private engine leaves the shared one untouched (a walk of the canonical pieces after it gives
the very numbers it gave before); the report names each group and its numbers.
"""

from __future__ import annotations

import numpy as np
import pytest
from cli_helpers import workbench
from typer.testing import CliRunner

from workbench.bench.noise import noise_bench
from workbench.cli import app

pytestmark = pytest.mark.slow


def test_two_evaluations_of_the_quickstarts_first_round(embedded_model) -> None:
    report = noise_bench(n=400, by="education")
    table = report.table
    assert table["n"].sum() == 400 and len(table) == 5
    assert ((table["tvd"] >= 0) & (table["tvd"] <= 1)).all()
    assert report.overall_tvd > 0  # another evaluation: some probability moved
    shift = (table["mean_whole"] - table["mean_pieces"]).to_numpy()
    assert np.allclose(shift, table["shift"].to_numpy())
    assert report.largest_shift == pytest.approx(np.abs(shift).max())
    again = noise_bench(n=400, by="education")  # the shared engine was not disturbed
    assert again.table.equals(table)
    text = str(report)
    assert "master's degree" in text and "largest group shift" in text


def test_the_cli_prints_the_report_and_refuses_an_unknown_column(embedded_model, tmp_path):
    result = CliRunner().invoke(app, ["bench", "noise", "-n", "50"])
    assert result.exit_code == 0, result.output
    assert "distinct prompts" in result.output and "gender" in result.output
    # the column it grouped by, why that one, the others --by can name, and what columns mean
    said = "grouped by gender (the first dimension; another with --by COLUMN, one of: education"
    assert said in result.output and "shift = mean_whole - mean_pieces" in result.output
    bad = workbench("bench", "noise", "-n", "50", "--by", "shoe_size", cwd=tmp_path)
    assert bad.returncode != 0 and "--by: 'shoe_size' is not a persona column" in bad.stderr
