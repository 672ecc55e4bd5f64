"""Result bundles: write a run's data and manifest atomically, read it back, verify it.

`layout` is the format (names, schemas, part paths), `writer` writes a bundle, `bundle` reads
one, `verify` checks one against itself, `replay` hands a bundle's answers to the replay model.
"""

from workbench.results.bundle import Bundle, list_bundles, read_events
from workbench.results.layout import RESPONSE_SCHEMA, ROUND_COLUMNS
from workbench.results.redact import redact
from workbench.results.verify import VerifyReport, verify_bundle
from workbench.results.writer import BundleWriter, new_run_id

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
