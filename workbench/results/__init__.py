"""Result bundles: write a run's data and manifest atomically, read it back, verify it."""

from workbench.results.bundle import (
    RESPONSE_SCHEMA,
    ROUND_COLUMNS,
    Bundle,
    BundleWriter,
    list_bundles,
    new_run_id,
    redact,
)
from workbench.results.verify import VerifyReport, verify_bundle

__all__ = [
    "RESPONSE_SCHEMA",
    "ROUND_COLUMNS",
    "Bundle",
    "BundleWriter",
    "VerifyReport",
    "list_bundles",
    "new_run_id",
    "redact",
    "verify_bundle",
]
