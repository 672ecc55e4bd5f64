"""Result bundles: write a run's data and manifest atomically, read it back, verify it.

`layout` is the format (names, schemas, part paths), `writer` writes a bundle, `bundle` reads
one, `verify` checks one against itself, `replay` hands a bundle's answers to the replay model.
The names below load on first use (PEP 562), so `import workbench.results.layout` stays light.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# eager (it is light): the submodule `redact` would otherwise shadow the function of that name
from workbench.results.redact import redact

if TYPE_CHECKING:
    from workbench.results.bundle import Bundle, list_bundles, read_events
    from workbench.results.layout import RESPONSE_SCHEMA, ROUND_COLUMNS
    from workbench.results.verify import VerifyReport, verify_bundle
    from workbench.results.writer import BundleWriter, new_run_id

_HOMES: dict[str, str] = {
    "RESPONSE_SCHEMA": "layout",
    "ROUND_COLUMNS": "layout",
    "Bundle": "bundle",
    "BundleWriter": "writer",
    "VerifyReport": "verify",
    "list_bundles": "bundle",
    "new_run_id": "writer",
    "read_events": "bundle",
    "verify_bundle": "verify",
}

__all__ = [
    "RESPONSE_SCHEMA",
    "ROUND_COLUMNS",
    "Bundle",
    "BundleWriter",
    "VerifyReport",
    "list_bundles",
    "new_run_id",
    "read_events",
    "redact",
    "verify_bundle",
]


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names, for tab completion."""
    return sorted({*globals(), *__all__})
