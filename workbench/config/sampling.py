"""The one sampling law: its settings, their defaults and ranges, and the order they apply in.

Every path that draws a token follows this law, so one config draws from one distribution
whichever path answers it: distribution mode's own sampler (`llm.distribution.sampler`), the
embedded model's per-agent chain (`llm.embedded.llamacpp_sampling`), a vLLM engine in process, and
the requests sent to servers (which get every setting, so a server's own defaults, such as a model's
`generation_config`, never apply). The order is vLLM's (its v1 sampler):

1. the allowed set (the output constraint's grammar);
2. temperature (0: the likeliest token, ties to the lowest id; nothing below applies);
3. min-p: tokens less likely than `min_p` times the likeliest are dropped (0: off);
4. top-k: the `top_k` likeliest are kept (0: all);
5. top-p: the shortest head whose mass reaches `top_p` is kept, then renormalised;
6. the draw.

min-p and top-k each keep a head of the same ranking, so their order between themselves does
not matter; top-p is computed on what they left. This module is the one place that holds the
settings' defaults, ranges and descriptions: `ModelSpec` takes its fields from here and
`llm.base.SamplingParams` its defaults and checks.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from pydantic import Field
from pydantic.fields import FieldInfo

LAW_VERSION = "workbench-sampling/2"
"""The law's version: recorded in the manifest (with its settings) by every path."""
ORDER = ("allowed set", "temperature", "min-p", "top-k", "top-p", "draw")
"""The order the settings apply in (vLLM's)."""


@dataclass(frozen=True)
class Setting:
    """One sampling setting: its default, its range and what it does."""

    default: float | int
    low: float
    high: float
    low_open: bool
    description: str

    def check(self, name: str, value: float) -> None:
        """ValueError naming `name`, its range and the value when `value` is outside it."""
        inside = (self.low < value if self.low_open else self.low <= value) and value <= self.high
        if not inside:
            bracket = "(" if self.low_open else "["
            low, high = _number(self.low), _number(self.high)
            raise ValueError(f"{name} must be in {bracket}{low}, {high}], got {value}.")

    def field(self, **extra: Any) -> FieldInfo:
        """This setting as a pydantic field (its default, bounds and description)."""
        bounds = {"gt" if self.low_open else "ge": self.low, "le": self.high}
        return Field(self.default, description=self.description, **bounds, **extra)  # type: ignore[arg-type]


def _number(x: float) -> str:
    """A bound as written: 1000000, not 1e+06; 0.5 as 0.5."""
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


SETTINGS: dict[str, Setting] = {
    "temperature": Setting(
        0.7, 0, 2, False, "sampling temperature, 0-2 (0: always the likeliest token)"
    ),
    "min_p": Setting(
        0.0,
        0,
        1,
        False,
        "min-p: drop tokens less likely than this times the likeliest one, after the "
        "temperature (0: off)",
    ),
    "top_k": Setting(
        40, 0, 1_000_000, False, "top-k: keep only the k likeliest tokens, after min-p (0: all)"
    ),
    "top_p": Setting(
        0.95,
        0,
        1,
        True,
        "nucleus sampling: keep the likeliest tokens up to this mass, after top-k and min-p",
    ),
    "max_tokens": Setting(8, 1, 4096, False, "most tokens generated per answer (1-4096)"),
}
"""Every setting of the law, in the order it applies (max_tokens last: it bounds the answer)."""


def sampling_field(name: str, **extra: Any) -> FieldInfo:
    """The pydantic field of setting `name` (a copy: each spec owns its own field object)."""
    return copy.copy(SETTINGS[name].field(**extra))


def law(settings: dict[str, float | int]) -> dict[str, Any]:
    """The law and these settings as plain data: for the manifest and the model's identity."""
    return {
        "law": LAW_VERSION,
        "order": ", ".join(ORDER),
        **{name: settings[name] for name in SETTINGS if name in settings},
    }
