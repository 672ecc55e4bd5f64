"""Dotted-key overrides: the one way a run config is varied.

    apply_overrides(config, {"game.ratio": "1/2", "model.temperature": 0}, "--set")

A key is a dotted path into the run config and its value replaces the config's value there (a
mapping replaces the whole section). `workbench run --set KEY=VALUE` and its flags (`--seed`,
`-n`, `--rounds`, `--backend`), sweep grids, `configure` in notebooks and the dashboard's
launcher form all end here, so one key means one thing everywhere and a bad one gets the same
message. Values given as text (`--set`, a form's text box) are read as YAML scalars or flow
collections: `0` is a number, `1/2` a fraction the spec reads, `[a, b]` a list.
"""

from __future__ import annotations

import copy
import itertools
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from workbench.config.run import RunConfig
from workbench.config.yaml_io import parse_yaml, resolve_population, validate
from workbench.errors import ConfigError

__all__ = [
    "KEY_PATTERN",
    "apply_overrides",
    "check_keys",
    "overridable",
    "parse_assignments",
    "with_overrides",
]

KEY_PATTERN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_-]+)*$")
"""A dotted config key: `game.ratio`, `model.name`, `models.small.temperature`."""


def check_keys(overrides: Mapping[str, Any], where: str, reserved: Iterable[str] = ()) -> None:
    """ValueError for a key that is not a dotted path, starts with a `reserved` section, or
    overlaps another key."""
    reserved = tuple(reserved)
    for key in overrides:
        if not KEY_PATTERN.fullmatch(key):
            raise ValueError(f"{where}: {key!r} is not a dotted config key like game.ratio")
        if key.split(".", 1)[0] in reserved:
            raise ValueError(
                f"{where}: {key}: the sweep's folder decides where bundles go; remove it"
            )
    for a, b in itertools.permutations(overrides, 2):
        if b.startswith(a + "."):
            raise ValueError(f"{where}: {a} and {b} overlap; override one of them")


def overridable(config: RunConfig) -> dict[str, Any]:
    """A config's data as overrides start from: only what was set, so defaults that depend on
    other keys (a mixed population's `game.group_by: model`) still apply after an override."""
    return config.model_dump(mode="json", exclude_unset=True)


def with_overrides(data: dict[str, Any], overrides: Mapping[str, Any], where: str) -> dict:
    """A deep copy of config `data` with each dotted key's value replaced (sections created)."""
    out = copy.deepcopy(data)
    for key, value in overrides.items():
        *parents, leaf = key.split(".")
        section = out
        for depth, part in enumerate(parents):
            section = section.setdefault(part, {})
            if not isinstance(section, dict):
                above = ".".join(parents[: depth + 1])
                raise ConfigError(
                    f"{where}: {key}: {above} holds {section!r}, not a section; "
                    f"override {above} itself"
                )
        section[leaf] = copy.deepcopy(value)
    return out


def apply_overrides(
    config: RunConfig,
    overrides: Mapping[str, Any],
    where: str = "overrides",
    *,
    base: Path | None = None,
    reserved: Iterable[str] = (),
) -> RunConfig:
    """`config` with each dotted key of `overrides` replaced, validated as a file is: one
    ConfigError starting with `where` that names the key and the fix. A `population` path in
    an override is read relative to `base`."""
    if not overrides:
        return config
    try:
        check_keys(overrides, where, reserved)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    data = with_overrides(overridable(config), overrides, where)
    return resolve_population(validate(RunConfig, data, where), base=base, source=where)


def parse_value(text: str, key: str, where: str) -> Any:
    """A value written as text, read as YAML (`0` -> 0, `1/2` -> "1/2", `[a, b]` -> a list,
    `null` -> None); ConfigError naming `key` for text that is not YAML."""
    try:
        return parse_yaml(text) if text.strip() else ""
    except yaml.YAMLError:
        raise ConfigError(
            f"{where}: {key}={text}: not a value; quote text, write lists as [a, b]"
        ) from None


def parse_assignments(items: Iterable[str], where: str = "--set") -> dict[str, Any]:
    """`KEY=VALUE` texts as overrides, in order (a later key replaces an earlier one);
    ConfigError for an item without `=`."""
    overrides: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{where} {item!r}: write KEY=VALUE, e.g. {where} game.ratio=1/2")
        overrides[key.strip()] = parse_value(text, key.strip(), where)
    return overrides
