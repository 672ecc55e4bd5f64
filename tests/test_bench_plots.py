"""`workbench bench plots` end to end at a small size: its steps, ratios and target line (the
numbers are for the README, not asserted), and the bundle reused on a second run."""

from __future__ import annotations

import re

from cli_helpers import assert_user_error, in_process

STEPS = (
    "read round 2 (responses + personas)",
    "group_summary(by=education)",
    "guess_counts(by=education)",
    *(f"distribution {k}: {s}" for k in ("bars", "heatmap", "quantiles", "means")
      for s in ("build", "render", "build + render")),
    "agents previous_guess x guess: build + render",
    "baseline: pandas merge + groupby(education).describe()",
    "baseline: hv.BoxWhisker on raw values: build + render (500 sampled, x4)",
)  # fmt: skip


def test_bench_plots_names_its_steps_and_ratios(tmp_path) -> None:
    args = ["bench", "plots", "-n", "2000", "--repeats", "1", "--baseline-sample", "500"]
    result = in_process([*args, "--folder", tmp_path / "bundles"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("plots benchmark: 2,000 agents (paper-education, level_k)")
    assert lines[1].startswith("bundle: built in ")
    rows = {line[:76].strip(): line[76:].split() for line in lines[4:-3]}
    assert tuple(rows) == STEPS
    assert all(float(seconds) >= 0 for row in rows.values() for seconds in row)
    assert float(rows["distribution quantiles: build + render"][2]) > 0  # browser KiB
    ratios = lines[-3:]
    assert re.fullmatch(r"ratio group_summary vs pandas describe: \d+\.\d\dx .*", ratios[0])
    assert re.fullmatch(r"ratio quantiles plot vs BoxWhisker on raw values: \d+\.\dx .*", ratios[1])
    target = r"target: distribution by education \(build \+ render, best\) under 2 s at 2,000"
    assert (
        re.match(target, ratios[2])
        and ratios[2].count(" s met") + ratios[2].count(" s MISSED") == 4
    )
    again = in_process([*args, "--folder", tmp_path / "bundles"], cwd=tmp_path)
    assert again.stdout.splitlines()[1].startswith("bundle: reused ")


def test_bench_plots_names_an_unknown_column(tmp_path) -> None:
    result = in_process(["bench", "plots", "-n", "10", "--by", "city"], cwd=tmp_path)
    assert_user_error(result, "--by: 'city'", "['gender', 'education']")
