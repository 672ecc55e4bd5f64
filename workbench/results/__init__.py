"""Result bundles: write a run's data and manifest atomically, read it back, verify it.

`layout` is the format (names, schemas, part paths), `writer` writes a bundle, `bundle` reads
one, `status` is the one status of a run (a run whose writer is gone reads dead), `verify`
checks one against itself, `replay` hands a bundle's answers to the replay model.
The names below load on first use (PEP 562), so `import workbench.results.layout` stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from workbench._lazy import lazy_face

# eager (it is light): the submodule `redact` would otherwise shadow the function of that name
from workbench.results.redact import redact

if TYPE_CHECKING:
    from workbench.results.bundle import Bundle, latest_bundle, list_bundles, read_events
    from workbench.results.current_status import run_status
    from workbench.results.layout import RESPONSE_SCHEMA, ROUND_COLUMNS
    from workbench.results.verify import VerifyReport, verify_bundle
    from workbench.results.writer import BundleWriter, new_run_id

_HOMES: dict[str, str] = {
    "RESPONSE_SCHEMA": "workbench.results.layout",
    "ROUND_COLUMNS": "workbench.results.layout",
    "Bundle": "workbench.results.bundle",
    "BundleWriter": "workbench.results.writer",
    "VerifyReport": "workbench.results.verify",
    "latest_bundle": "workbench.results.bundle",
    "list_bundles": "workbench.results.bundle",
    "new_run_id": "workbench.results.writer",
    "read_events": "workbench.results.bundle",
    "run_status": "workbench.results.current_status",
    "verify_bundle": "workbench.results.verify",
}

__all__ = [
    "RESPONSE_SCHEMA",
    "ROUND_COLUMNS",
    "Bundle",
    "BundleWriter",
    "VerifyReport",
    "latest_bundle",
    "list_bundles",
    "new_run_id",
    "read_events",
    "redact",
    "run_status",
    "verify_bundle",
]


__getattr__, __dir__ = lazy_face(__name__, _HOMES, globals())
