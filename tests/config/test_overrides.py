"""One override mechanism: `workbench run --set`, its flags, sweeps and `configure` give the
same config for the same dotted keys, and the same message for a bad one; fractions are shown as
researchers write them."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

import workbench as wb
from tests.cli_helpers import in_process
from workbench._examples import example_path
from workbench.config import (
    GameSpec,
    apply_overrides,
    fraction_text,
    load_run_config,
    parse_assignments,
    parse_run_config,
)
from workbench.errors import ConfigError
from workbench.experiment.grid import GridSpec, expand_grid

KEYS = {"game.ratio": "1/2", "model.temperature": 0}


def printed_config(tmp_path: Path, *args: str) -> wb.RunConfig:
    """The config `workbench run quickstart.yaml ARGS --print-config` prints, read back."""
    result = in_process(["run", example_path("quickstart"), *args, "--print-config"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "results").exists()  # printed, not run
    return parse_run_config(result.stdout, "printed", base=example_path("quickstart").parent)


def test_set_on_the_command_line_and_a_sweep_cell_give_identical_configs(
    tmp_path: Path,
) -> None:
    printed = printed_config(tmp_path, "--set", "game.ratio=1/2", "--set", "model.temperature=0")
    base = load_run_config(example_path("quickstart"))
    (cell,) = expand_grid(base, GridSpec(cells=[KEYS]))
    assert cell.run_config is not None
    assert printed == cell.run_config
    assert printed == wb.configure("quickstart", KEYS)
    assert (printed.game.ratio, printed.model.temperature) == (0.5, 0.0)
    assert printed.as_written()["game"]["ratio"] == "1/2"  # as tables and bundles show show it
    assert printed != base  # the overrides did something


def test_the_flags_are_overrides_of_their_keys(tmp_path: Path) -> None:
    flags = printed_config(tmp_path, "--rounds", "3", "-n", "12", "--seed", "7")
    keys = printed_config(
        tmp_path, "--set", "game.rounds=3", "--set", "n_agents=12", "--set", "seed=7"
    )
    assert flags == keys
    assert (flags.game.rounds, flags.n_agents, flags.seed) == (3, 12, 7)


@pytest.mark.parametrize(
    ("key", "text", "says"),
    [
        ("game.ratio", "2", "game.ratio: must be in (0, 1], got 2.0"),
        ("game.nope", "1", "game.nope: unknown key; remove it or check its spelling"),
        ("game ratio", "1", "'game ratio' is not a dotted config key like game.ratio"),
    ],
)
def test_a_bad_key_gets_the_same_message_everywhere(
    tmp_path: Path, key: str, text: str, says: str
) -> None:
    result = in_process(["run", example_path("quickstart"), "--set", f"{key}={text}"], tmp_path)
    assert result.returncode != 0 and says in result.stderr and result.stdout == ""
    assert not (tmp_path / "results").exists()
    with pytest.raises(ConfigError) as notebook:
        wb.configure("quickstart", parse_assignments([f"{key}={text}"]))
    assert says in str(notebook.value)
    base = load_run_config(example_path("quickstart"))
    with pytest.raises((ConfigError, ValueError)) as sweep:
        expand_grid(base, GridSpec(cells=[parse_assignments([f"{key}={text}"])]))
    assert says in str(sweep.value)


def test_set_needs_key_equals_value(tmp_path: Path) -> None:
    result = in_process(["run", example_path("quickstart"), "--set", "game.ratio"], tmp_path)
    assert result.returncode != 0
    assert "--set 'game.ratio': write KEY=VALUE" in result.stderr


def test_values_are_read_as_yaml() -> None:
    assert parse_assignments(["a=0", "b=1/2", "c=[x, y]", "d=null", "e=true", "f="]) == {
        "a": 0,
        "b": "1/2",
        "c": ["x", "y"],
        "d": None,
        "e": True,
        "f": "",
    }
    with pytest.raises(ConfigError, match=r"--set: x=\[1, 2: not a value"):
        parse_assignments(["x=[1, 2"])


def test_no_overrides_is_the_config_itself() -> None:
    base = load_run_config(example_path("quickstart"))
    assert apply_overrides(base, {}) is base


@pytest.mark.parametrize(
    ("value", "text"),
    [(2 / 3, "2/3"), (0.51, "51/100"), (0.5, "1/2"), (100.0, "100"), (-5.0, "-5"),
     (1 / 3 + 1e-9, repr(1 / 3 + 1e-9)), (0.123456789, "0.123456789")],
)  # fmt: skip
def test_fractions_are_shown_as_written_and_read_back_equal(value: float, text: str) -> None:
    assert fraction_text(value) == text
    assert float(Fraction(text)) == value
    if 0 < value <= 1:
        assert GameSpec(ratio=text).ratio == value


def test_print_config_writes_the_ratio_as_a_fraction(tmp_path: Path) -> None:
    result = in_process(["run", example_path("quickstart"), "--print-config"], tmp_path)
    assert "ratio: 2/3" in result.stdout
    assert parse_run_config(result.stdout, "printed", base=example_path("quickstart").parent) == (
        load_run_config(example_path("quickstart"))
    )
