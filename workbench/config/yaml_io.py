"""Safe YAML in and out for specs: one loader, one validation path, one-line errors.

Files are read with a SafeLoader that keeps keys as written, refuses duplicate keys and bounds
the nesting depth; `validate` turns plain data into a spec, naming the file in every message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel

from workbench._files import atomic_write_text
from workbench.config.base import StrictModel
from workbench.config.population import PopulationSpec
from workbench.config.run import RunConfig
from workbench.errors import ConfigError

M = TypeVar("M", bound=StrictModel)

MAX_YAML_DEPTH = 100
"""Deepest nesting of mappings and lists a config may have (real ones need about five)."""


class YAMLDepthError(yaml.YAMLError):
    """YAML (or plain data) nested deeper than MAX_YAML_DEPTH levels."""

    def __init__(self) -> None:
        super().__init__(
            f"YAML nested deeper than {MAX_YAML_DEPTH} levels; a config needs only a few, so "
            "look for unclosed or runaway brackets"
        )


class _ConfigLoader(yaml.SafeLoader):
    """SafeLoader that keeps mapping keys as written, refuses duplicate keys, bounds depth.

    Plain YAML turns the key `18:` into an int and `yes:` / `no:` into booleans, and lets a
    second `game:` silently replace the first; here keys stay the text that was typed (pydantic
    still reads "0" as the int 0 where a number is expected) and a duplicate is an error.
    PyYAML composes nodes recursively, so nesting is cut off at MAX_YAML_DEPTH levels long
    before Python's recursion limit.
    """

    _depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        """Compose one node, one level deeper; YAMLDepthError past MAX_YAML_DEPTH."""
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise YAMLDepthError()
            return super().compose_node(parent, index)  # type: ignore[misc]
        finally:
            self._depth -= 1

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[Any, Any]:
        """A mapping with keys as written; ConstructorError naming a duplicate key's line."""
        if not isinstance(node, yaml.MappingNode):
            return super().construct_mapping(node, deep=deep)
        own: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self._key(key_node, deep)
            if key in own:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found duplicate key {key!r}",
                    key_node.start_mark,
                )
            own.add(key)
        self.flatten_mapping(node)
        return {self._key(k, deep): self.construct_object(v, deep=deep) for k, v in node.value}

    def _key(self, node: yaml.Node, deep: bool) -> Any:
        """A key as written (scalars stay text); ConstructorError for an unhashable key."""
        if isinstance(node, yaml.ScalarNode):
            return node.value
        key = self.construct_object(node, deep=deep)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", None, "found an unhashable key", node.start_mark
            ) from None
        return key


def parse_yaml(text: str) -> Any:
    """Load YAML text as config data: keys kept as written, duplicate keys refused.

    Raises yaml.YAMLError for text that is not YAML, YAMLDepthError for runaway nesting.
    """
    try:
        return yaml.load(text, Loader=_ConfigLoader)  # a SafeLoader subclass: safe
    except RecursionError:
        raise YAMLDepthError() from None


def read_yaml_text(text: str, source: str) -> Any:
    """Safe-load YAML text (a notebook cell, an upload); ConfigError starting with `source`
    for text that is not YAML or nests without end, as `read_yaml` says it for a file."""
    try:
        return parse_yaml(text)
    except YAMLDepthError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(
            f"{source}: not valid YAML{where}: {getattr(exc, 'problem', exc)}"
        ) from None


def read_yaml(path: str | Path) -> Any:
    """Safe-load a YAML file; ConfigError for a missing, unparsable or runaway-nested file."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: file not found; check the path")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a UTF-8 text file") from None
    return read_yaml_text(text, str(path))


def _check_depth(data: Any) -> None:
    """YAMLDepthError when mappings and lists nest deeper than MAX_YAML_DEPTH.

    Iterative, and a container shared by YAML aliases is walked again only when reached deeper
    than before, so neither deep nor alias-multiplied data can make the walk blow up.
    """
    deepest: dict[int, int] = {}
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if not isinstance(value, dict | list | tuple) or deepest.get(id(value), 0) >= depth:
            continue
        if depth > MAX_YAML_DEPTH:
            raise YAMLDepthError()
        deepest[id(value)] = depth
        children = value.values() if isinstance(value, dict) else value
        stack.extend((child, depth + 1) for child in children)


def validate(model: type[M], data: Any, source: str) -> M:
    """Build `model` from plain data; ConfigError naming `source` and each bad field otherwise."""
    if data is None:
        raise ConfigError(f"{source}: empty; expected a mapping of keys (key: value lines)")
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source}: expected a mapping of keys (key: value lines), got a {type(data).__name__}"
        )
    try:
        _check_depth(data)
    except YAMLDepthError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    return model.validate_data(data, source)


def load_population_spec(path: str | Path) -> PopulationSpec:
    """Read a population spec YAML file."""
    return validate(PopulationSpec, read_yaml(path), str(path))


def load_run_config(path: str | Path) -> RunConfig:
    """Read a run config; a population given as a path is loaded relative to the config file."""
    path = Path(path)
    config = validate(RunConfig, read_yaml(path), str(path))
    return resolve_population(config, base=path.parent, source=str(path))


def parse_run_config(text: str, source: str = "<text>", base: Path | None = None) -> RunConfig:
    """A run config from YAML text; a population path is loaded relative to `base` (then the
    current directory). ConfigError starting with `source`, as `load_run_config` for a file."""
    config = validate(RunConfig, read_yaml_text(text, source), source)
    return resolve_population(config, base=base, source=source)


def parse_population_spec(text: str, source: str = "<text>") -> PopulationSpec:
    """A population spec from YAML text; ConfigError starting with `source` otherwise."""
    return validate(PopulationSpec, read_yaml_text(text, source), source)


def resolve_population(
    config: RunConfig, base: Path | None = None, *, source: str | None = None
) -> RunConfig:
    """Replace a population path by the spec it names (relative paths against `base`, then cwd).

    `source` (the config file's name) prefixes the message when the file is not found.
    """
    if isinstance(config.population, PopulationSpec):
        return config
    candidate = Path(config.population)
    if not candidate.is_absolute() and base is not None and (base / candidate).is_file():
        candidate = base / candidate
    if not candidate.is_file():
        if candidate.is_absolute():
            looked = "checked that path"
        else:
            looked = f"looked relative to {base or '.'} and the current directory"
        prefix = f"{source}: " if source else ""
        raise ConfigError(f"{prefix}population: file {config.population!r} not found ({looked})")
    return config.model_copy(update={"population": load_population_spec(candidate)})


def to_yaml(model: BaseModel, *, as_written: bool = False) -> str:
    """A spec as YAML text that loads back into an equal spec; `as_written`: a run config's
    game numbers as a researcher writes them (`ratio: 2/3`), for people to read and edit."""
    data = (
        model.as_written()
        if as_written and isinstance(model, RunConfig)
        else model.model_dump(mode="json")
    )
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def save_yaml(model: BaseModel, path: str | Path) -> Path:
    """Write a spec as YAML atomically (temp file, fsync, rename: never half a file)."""
    return atomic_write_text(path, to_yaml(model))
