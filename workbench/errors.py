"""The workbench's exception tree.

    WorkbenchError            base of every error the workbench raises on purpose
    ├── ConfigError           a spec or config is wrong; the message names the field and the fix
    ├── BundleError           a bundle is missing, unreadable, incomplete or fails verification
    └── ModelError            a language model could not be loaded or reached

The CLI prints these as one line and exits non-zero; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations


class WorkbenchError(Exception):
    """Base class for errors that are the user's to fix, reported without a traceback."""


class ConfigError(WorkbenchError):
    """A config or spec is invalid: the message names the field, what is allowed and what came."""


class BundleError(WorkbenchError):
    """A result bundle cannot be read, is incomplete, or fails verification."""


class ModelError(WorkbenchError):
    """A language model could not be loaded or reached."""
