"""The `workbench` command end to end, in subprocesses.

User errors exit 2 with one line on stderr that starts with "error:" and names the field, and
leave no bundle behind; a small random-policy run writes a bundle that `bundles verify`,
`bundles list` and `bundles show` read back, and tampering with it makes verify fail.

Each subprocess pays seconds of imports, so the error cases run concurrently, and the extra
cases (beyond the main ones) call `workbench.cli.main` in this process instead.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from cli_helpers import Result, assert_user_error, in_process, run_all, workbench
from run_configs import run_config

from workbench.results import Bundle

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
EDUCATION = ROOT / "personas" / "paper-education.yaml"
TIMEOUT_S = 120


def small_config(tmp_path: Path, **game: object) -> Path:
    """50 random agents, 2 rounds, the paper's education population by absolute path."""
    rounds = game.pop("rounds", 2)
    lines = [
        "name: small",
        "seed: 3",
        "n_agents: 50",
        f"population: {json.dumps(str(EDUCATION))}",
        f"game: {{rounds: {rounds}}}",
        "policy: {kind: random, latency_s: 0}",
    ]
    path = tmp_path / "small.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# --------------------------------------------------------------------------- user errors
# Every error case runs once, all of them at the same time (each start costs seconds of imports).

BAD_CONFIGS = {
    "unknown-key": ("n_agnets: 5\n", ["n_agnets: unknown key"]),
    "negative-n-agents": (
        "n_agents: -5\n",
        ["n_agents: must be at least 1, got -5"],
    ),
    "ratio-2": ("game: {ratio: 2}\n", ["game.ratio: must be in (0, 1], got 2"]),
    "low-ge-high": ("game: {low: 50, high: 10}\n", ["game: low must be < high"]),
    "missing-population-file": (
        "population: no-such.yaml\n",
        ["population: file 'no-such.yaml' not found"],
    ),
    # run in this process:
    "nested-unknown-key": ("game: {foo: 1}\n", ["game.foo: unknown key"]),
    "not-a-mapping": ("- n_agents\n- 5\n", ["expected a mapping of keys", "got a list"]),
}
MANIFESTS = {"garbage": "{garbage", "list": "[1, 2]", "schema": '{"schema_version": 99}'}
SUBPROCESS_CASES = {
    "config-unknown-key",
    "config-negative-n-agents",
    "config-ratio-2",
    "config-low-ge-high",
    "config-missing-population-file",
    "config-file-missing",
    "show-missing-dir",
    "verify-missing-dir",
    "show-manifest-garbage",
    "verify-manifest-garbage",
    "personas-out-txt",
}
"""Cases run as real subprocesses; the others run through `main()` in this process."""


def error_cases(work: Path) -> dict[str, list[str | Path]]:
    """Name -> command-line arguments of every user-error case, with their files in `work`."""
    cases: dict[str, list[str | Path]] = {}
    for name, (text, _) in BAD_CONFIGS.items():
        case_dir = work / name
        case_dir.mkdir()
        if "population:" not in text and not text.startswith("-"):
            text = f"population: {json.dumps(str(EDUCATION))}\npolicy: {{kind: random}}\n" + text
        (case_dir / "bad.yaml").write_text(text, encoding="utf-8")
        cases[f"config-{name}"] = ["run", case_dir / "bad.yaml", "--out", case_dir / "out"]
    cases["config-file-missing"] = ["run", work / "missing.yaml", "--out", work / "missing-out"]
    config = small_config(work)
    cases["override-rounds"] = ["run", config, "--out", work / "o1", "--rounds", "0"]
    cases["override-n-agents"] = ["run", config, "--out", work / "o2", "-n", "0"]
    for command in ("show", "verify"):
        cases[f"{command}-missing-dir"] = ["bundles", command, work / "nothing-here"]
        for name, text in MANIFESTS.items():
            bundle = work / f"fake-{command}-{name}"
            bundle.mkdir()
            (bundle / "manifest.json").write_text(text, encoding="utf-8")
            cases[f"{command}-manifest-{name}"] = ["bundles", command, bundle]
    cases["personas-out-txt"] = ["personas", "sample", EDUCATION, "-n", "7", "--out", "x.txt"]
    spec = work / "spec.yaml"
    spec.write_text("dimensions:\n  - name: g\n    shares: {a: 0.7, b: 0.7}\n", encoding="utf-8")
    cases["personas-bad-spec"] = ["personas", "sample", spec]
    levelk = work / "levelk.yaml"
    levelk.write_text(
        f"n_agents: 10\npopulation: {json.dumps(str(EDUCATION))}\n"
        "policy: {kind: level_k, attribute: job, by_attribute: {x: {0: 1}}}\n",
        encoding="utf-8",
    )
    cases["level-k-unknown-attribute"] = ["run", levelk, "--out", work / "lk-out"]
    return {
        name: [*args, "--no-progress"] if args[0] == "run" else args for name, args in cases.items()
    }


@pytest.fixture(scope="module")
def error_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Result]]:
    """(work dir, name -> result) of every error case; the subprocesses run concurrently."""
    work = tmp_path_factory.mktemp("cli-errors")
    cases = error_cases(work)
    assert SUBPROCESS_CASES <= set(cases)
    results = run_all({k: v for k, v in cases.items() if k in SUBPROCESS_CASES}, cwd=work)
    for name, args in cases.items():
        if name not in SUBPROCESS_CASES:
            results[name] = in_process(args, cwd=work)
    return work, results


@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_bad_config_exits_2_with_one_line_and_writes_no_bundle(
    error_runs: tuple[Path, dict[str, Result]], case: str
) -> None:
    work, results = error_runs
    result = results[f"config-{case}"]
    line = assert_user_error(result, *BAD_CONFIGS[case][1])
    assert str(work / case / "bad.yaml") in line
    out = work / case / "out"
    assert not out.exists() or not any(out.iterdir())
    assert result.stdout == ""


def test_missing_config_file(error_runs: tuple[Path, dict[str, Result]]) -> None:
    work, results = error_runs
    assert_user_error(results["config-file-missing"], "missing.yaml: file not found")
    assert not (work / "missing-out").exists()


def test_bad_command_line_override_names_the_field(
    error_runs: tuple[Path, dict[str, Result]],
) -> None:
    work, results = error_runs
    assert_user_error(
        results["override-rounds"], "(with command-line overrides): game.rounds:", "got 0"
    )
    assert_user_error(results["override-n-agents"], "n_agents: must be at least 1, got 0")
    assert not (work / "o1").exists() and not (work / "o2").exists()


@pytest.mark.parametrize("command", ["show", "verify"])
def test_bundles_commands_on_a_missing_directory(
    error_runs: tuple[Path, dict[str, Result]], command: str
) -> None:
    _, results = error_runs
    assert_user_error(
        results[f"{command}-missing-dir"],
        "nothing-here/manifest.json: not a result bundle (no such directory)",
    )


@pytest.mark.parametrize("command", ["show", "verify"])
@pytest.mark.parametrize("manifest", sorted(MANIFESTS))
def test_bundles_commands_on_a_garbage_manifest(
    error_runs: tuple[Path, dict[str, Result]], command: str, manifest: str
) -> None:
    _, results = error_runs
    assert_user_error(
        results[f"{command}-manifest-{manifest}"],
        f"fake-{command}-{manifest}/manifest.json: not a result bundle (",
    )


def test_personas_sample_rejects_other_suffixes(error_runs: tuple[Path, dict[str, Result]]) -> None:
    work, results = error_runs
    result = results["personas-out-txt"]
    assert_user_error(result, "--out: use a .parquet or .csv file name, got 'x.txt'")
    assert not (work / "x.txt").exists()
    assert result.stdout == ""  # rejected before anything was sampled or printed


def test_personas_sample_bad_spec(error_runs: tuple[Path, dict[str, Result]]) -> None:
    _, results = error_runs
    assert_user_error(
        results["personas-bad-spec"],
        "spec.yaml: dimensions.0: dimension 'g': shares must sum to 1, got 1.4",
    )


def test_level_k_unknown_attribute_writes_nothing(
    error_runs: tuple[Path, dict[str, Result]],
) -> None:
    work, results = error_runs
    assert_user_error(
        results["level-k-unknown-attribute"],
        "policy.attribute: 'job' is not a population dimension",
    )
    out = work / "lk-out"
    assert not out.exists() or not any(out.iterdir())


def test_bundles_list_skips_non_bundles(tmp_path: Path) -> None:
    (tmp_path / "out" / "junk").mkdir(parents=True)
    result = in_process(["bundles", "list", tmp_path / "out"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"no bundles under {tmp_path / 'out'}"


# --------------------------------------------------------------------------- personas


def test_personas_sample_prints_exact_quotas(tmp_path: Path) -> None:
    result = workbench("personas", "sample", EDUCATION, "-n", "7", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    counts = {}
    for line in result.stdout.splitlines():
        words = line.split()
        if words and words[0] in ("gender", "education"):
            # dimension, category (may hold spaces), count, share, target
            counts[(words[0], " ".join(words[1:-3]))] = int(words[-3])
    # Largest remainder: 7 * 0.5 = 3.5 each -> 4 + 3; 7 * 0.2 = 1.4 each -> the first two get 2.
    assert counts == {
        ("gender", "male"): 4,
        ("gender", "female"): 3,
        ("education", "elementary school"): 2,
        ("education", "high school"): 2,
        ("education", "bachelor's degree"): 1,
        ("education", "master's degree"): 1,
        ("education", "doctoral degree"): 1,
    }
    assert "You are a" in result.stdout  # a few personas follow the counts


def test_personas_sample_writes_parquet(tmp_path: Path) -> None:
    out = tmp_path / "p.parquet"
    result = in_process(["personas", "sample", EDUCATION, "-n", "12", "--out", out], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"wrote 12 personas to {out}" in result.stdout
    assert pq.read_table(out).num_rows == 12


# --------------------------------------------------------------------------- a real run


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """One `workbench run` of the small config: (out dir, bundle path, stdout)."""
    work = tmp_path_factory.mktemp("cli-run")
    out = work / "out"
    result = workbench("run", small_config(work), "--out", out, "--no-progress", cwd=work)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    bundle_lines = [line for line in result.stdout.splitlines() if line.startswith("bundle: ")]
    assert len(bundle_lines) == 1, result.stdout
    bundle = Path(bundle_lines[0].removeprefix("bundle: "))
    bundle = bundle if bundle.is_absolute() else work / bundle
    return out, bundle, result.stdout


def test_run_prints_the_round_table_and_the_bundle(small_run: tuple[Path, Path, str]) -> None:
    out, bundle, stdout = small_run
    lines = stdout.splitlines()
    header = lines[0].split()
    assert header[:7] == ["round", "n", "n_valid", "failed", "mean", "median", "target"]
    rows = [line.split() for line in lines[1:3]]
    assert [row[0] for row in rows] == ["1", "2"]
    assert all(row[1:4] == ["50", "50", "0"] for row in rows)
    assert all(len(row) == len(header) - 1 for row in rows)  # an empty note: nothing to flag
    for row in rows:
        mean, target = float(row[4]), float(row[6])
        assert 0 <= mean <= 100
        assert target == pytest.approx(2 / 3 * mean, abs=0.01)
    assert bundle.parent == out
    opened = Bundle.open(bundle)
    assert opened.is_complete
    assert opened.config.n_agents == 50 and opened.config.seed == 3
    assert len(opened.responses()) == 100


def test_bundles_verify_list_show(small_run: tuple[Path, Path, str], tmp_path: Path) -> None:
    out, bundle, _ = small_run
    results = run_all(
        {
            "verify": ["bundles", "verify", bundle],
            "list": ["bundles", "list", out],
            "show": ["bundles", "show", bundle],
        },
        cwd=tmp_path,
    )
    verify, listed, show = results["verify"], results["list"], results["show"]
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert verify.stdout.startswith(f"OK {bundle}")

    assert listed.returncode == 0, listed.stderr
    assert bundle.name in listed.stdout and "complete" in listed.stdout
    row = next(line for line in listed.stdout.splitlines() if bundle.name in line)
    assert row.split()[-2:] == ["2", str(bundle)]  # rounds_done, path

    assert show.returncode == 0, show.stderr
    assert f"run:     {bundle.name} (complete)" in show.stdout
    assert "agents:  50 (random), seed 3" in show.stdout
    assert "rounds=2" in show.stdout
    lines = show.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == ["round"])
    table = lines[start:]
    assert table[0].split()[:3] == ["round", "n", "n_valid"]
    assert [line.split()[0] for line in table[1:]] == ["1", "2"]


def test_tampered_responses_fail_verify_naming_the_file(
    small_run: tuple[Path, Path, str], tmp_path: Path
) -> None:
    _, original, _ = small_run
    bundle = tmp_path / original.name
    shutil.copytree(original, bundle)
    part = bundle / "responses" / "round-2" / "part-00000.parquet"
    table = pq.read_table(part)
    guesses = table.column("guess").to_pylist()
    guesses[0] = 100.0 if guesses[0] != 100.0 else 0.0
    index = table.column_names.index("guess")
    table = table.set_column(index, table.schema.field(index), pc.cast(guesses, "float64"))
    pq.write_table(table, part)

    result = workbench("bundles", "verify", bundle, cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.startswith(f"FAILED {bundle}")
    assert "responses/round-2/part-00000.parquet: sha256 differs from the manifest" in result.stdout
    assert "rounds.parquet round 2: mean is" in result.stdout  # the statistics no longer match
    assert "round 1" not in result.stdout
    assert "Traceback" not in result.stderr


def test_level_k_run_with_seed_and_rounds_overrides(tmp_path: Path) -> None:
    config = tmp_path / "levelk.yaml"
    config.write_text(
        "name: lk\n"
        "seed: 1\n"
        "n_agents: 40\n"
        f"population: {json.dumps(str(EDUCATION))}\n"
        "game: {rounds: 1}\n"
        "policy:\n"
        "  kind: level_k\n"
        "  depth_shares: {0: 1/4, 1: 1/4, 2: 1/2}\n"
        "  attribute: education\n"
        "  by_attribute:\n"
        "    doctoral degree: {3: 1}\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    args = ("run", config, "--out", out, "--no-progress", "--seed", "11", "--rounds", "3")
    result = workbench(*args, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert [line.split()[0] for line in result.stdout.splitlines()[1:4]] == ["1", "2", "3"]
    (bundle,) = out.iterdir()
    opened = Bundle.open(bundle)
    assert opened.is_complete
    assert opened.config.seed == 11 and opened.config.game.rounds == 3
    assert opened.config.policy.kind == "level_k"
    assert opened.manifest["seeds"]["run"] == 11
    assert len(opened.rounds()) == 3
    # The bundle verifies; the same overrides give the same numbers, another seed other ones.
    verify = in_process(["bundles", "verify", bundle], cwd=tmp_path)
    assert verify.returncode == 0, verify.stdout
    again = in_process([*args[:3], tmp_path / "again", *args[4:]], cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    other_args = [*args[:3], tmp_path / "other", *args[4:-4], "--seed", "12", "--rounds", "3"]
    other = in_process(other_args, cwd=tmp_path)
    assert other.returncode == 0, other.stderr

    def table(stdout: str) -> list[list[str]]:
        return [line.split()[:5] for line in stdout.splitlines()[1:4]]

    assert table(again.stdout) == table(result.stdout)
    assert table(other.stdout) != table(result.stdout)


# --------------------------------------------------------------------------- failed answers


class DeadModel:
    """Every answer fails, as a dead model server's do once the retries are spent."""

    identity = {"engine": "fake", "name": "dead"}

    async def generate(self, requests, params):
        from workbench.llm.base import ChatResult

        error = "http://127.0.0.1:9/v1: ConnectError: connection refused"
        return [ChatResult(text=None, error=error, error_kind="model_error") for _ in requests]


def dead_model_bundle(tmp_path: Path, max_failed_share: float) -> Path:
    """A 6-agent, 2-round LLM run on DeadModel: failed in round 1, or (share 1) complete."""
    from workbench.errors import RoundFailedError
    from workbench.runtime import Simulation

    config = run_config(
        EDUCATION, n_agents=6, policy={"kind": "llm"}, max_failed_share=max_failed_share
    )
    out = tmp_path / f"out-{max_failed_share:g}"
    sim = Simulation(config, model=DeadModel())
    if max_failed_share < 1:
        with pytest.raises(RoundFailedError):
            sim.run(out_dir=out, progress=False)
    else:
        sim.run(out_dir=out, progress=False)
    (bundle,) = out.iterdir()
    return bundle


def test_the_round_table_flags_failures_and_rounds_without_valid_answers() -> None:
    from workbench.cli import RoundTable

    table = RoundTable()
    assert table.header().split() == [
        "round",
        "n",
        "n_valid",
        "failed",
        "mean",
        "median",
        "target",
        "winning",
        "n_winners",
        "seconds",
        "note",
    ]
    nan = float("nan")
    dead = {"round": 2, "n": 6, "n_valid": 0, "n_failed": 6, "mean": nan, "target": nan}
    line = table.row({**dead, "n_winners": 0, "seconds": 0.5})
    assert line.split() == [
        "2",
        "6",
        "0",
        "6",
        "-",
        "-",
        "-",
        "-",
        "0",
        "0.50",
        "no",
        "valid",
        "answers,",
        "6",
        "failed",
    ]
    assert "nan" not in line.lower()
    some = {"round": 1, "n": 6, "n_valid": 3, "n_failed": 3, "mean": 40.0, "target": 26.67}
    assert table.row({**some, "n_winners": 3, "seconds": 0.5}).endswith("  3 failed")
    fine = {"round": 1, "n": 6, "n_valid": 6, "n_failed": 0, "mean": 40.0, "target": 26.67}
    assert table.row({**fine, "n_winners": 6, "seconds": 0.5}).endswith("0.50")


def test_bundles_show_flags_failed_rounds_and_names_the_resume(tmp_path: Path) -> None:
    complete = dead_model_bundle(tmp_path, 1.0)  # today's behaviour, on request
    result = in_process(["bundles", "show", complete], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == ["round"])
    assert lines[start].split()[:4] == ["round", "n", "n_valid", "failed"]
    rows = lines[start + 1 :]
    assert len(rows) == 2 and all(r.endswith("no valid answers, 6 failed") for r in rows)
    assert "nan" not in result.stdout.lower() and "resume:" not in result.stdout

    failed = dead_model_bundle(tmp_path, 0.5)
    result = in_process(["bundles", "show", failed], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"({Bundle.open(failed).status})" in result.stdout.splitlines()[0]
    assert "error:   RoundFailedError: round 1: 6 of 6 answers failed" in result.stdout
    assert f"resume:  workbench run --resume {failed}\n" in result.stdout
    assert result.stdout.rstrip().endswith("no rounds completed")


def test_a_resume_refuses_options_that_change_the_run(tmp_path: Path) -> None:
    failed = dead_model_bundle(tmp_path, 0.5)
    args = ["run", "--resume", failed, "--seed", "0", "--out", tmp_path, "--no-progress"]
    assert_user_error(
        in_process(args, cwd=tmp_path),
        "--out, --seed: a resumed run keeps its bundle's config and folder",
    )
    assert_user_error(
        in_process(["run", "--resume", failed, "--base-url", "http://127.0.0.1:9/v1"], tmp_path),
        "error: --base-url: the run's model is kind 'embedded'; base URLs are for kind openai",
    )
    assert Bundle.open(failed).status == "failed"  # untouched
