"""The workbench's exception tree, and the rule for which to raise.

    WorkbenchError            base of every error the workbench raises on purpose
    ├── ConfigError           a spec or config is wrong; the message names the field and the fix
    │                         (also a ValueError, so `except ValueError` keeps working)
    ├── BundleError           a bundle is missing, unreadable, incomplete or fails verification
    │   └── BundleLockedError another live process is writing this bundle
    ├── ModelError            a language model could not be loaded or reached
    │   └── RoundFailedError  more of a round's answers failed than `max_failed_share` allows
    │                         (the round is not stored, the run is marked failed, resume replays it)
    └── ContractError         a part broke the contract between layers (a policy returned the
                              wrong number of decisions, a backend was used before start())

The rule:
- pure functions (game rules, sampling, parsing) raise plain `ValueError` for bad arguments;
- spec and file boundaries (pydantic specs, YAML files, CLI options, bundle paths) raise
  `ConfigError` or `BundleError` with one line naming the field or file and the fix;
- a model that cannot be loaded or reached raises `ModelError`; a round in which more answers
  failed than the config's `max_failed_share` allows raises `RoundFailedError`, whose message
  ends with the fix (the resume command, where a resume can help);
- a breach of a contract between the workbench's own parts raises `ContractError`, never a bare
  `RuntimeError`; anything else is a bug and keeps its traceback.

The CLI prints WorkbenchErrors as one line and exits with their `exit_status`; a run that fails
after its bundle was written prints the manifest's error line and the resume command, and exits
with `EXIT_STATUS_FAILED_RUN`.
"""

from __future__ import annotations

EXIT_STATUS_FAILED_RUN = 1
"""The `workbench` command's exit status when a run fails after its bundle was written (it prints
the manifest's error line and the resume command)."""


class WorkbenchError(Exception):
    """Base class for errors that are the user's to fix, reported without a traceback."""

    exit_status: int = 2
    """The `workbench` command's exit status when this error stops it before any bundle was
    written (it prints the error as one line)."""


class ConfigError(WorkbenchError, ValueError):
    """A config or spec is invalid: the message names the field, what is allowed and what came.

    `problems`, where the message was made from a spec's validation: each problem as (field
    path like `dimensions.1.shares`, '' for the whole spec; its text), so a form can show each
    next to its field."""

    def __init__(self, message: str, *, problems: tuple[tuple[str, str], ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems


class BundleError(WorkbenchError):
    """A result bundle cannot be read, is incomplete, or fails verification."""

    field: str | None = None
    """The damaged manifest field, where one is: a listing names it beside the bundle."""
    detail: str | None = None
    """What that field must be and what it is."""


class BundleLockedError(BundleError):
    """Another live process (its pid and host in the message) is writing the bundle."""


class ModelError(WorkbenchError):
    """A language model could not be loaded or reached."""


NO_RESUME = "a resume would replay the same prompts"
"""Said in a failed run's error when a resume cannot help (its prompts do not fit the model's
context, and a resumed run keeps its config): the CLI then offers no resume command."""


class RoundFailedError(ModelError):
    """Too many of a round's answers failed (model_error or timeout): the run stopped as failed
    before storing the round, so `workbench run --resume` replays it.

    `round_number` and `bundle` say which round of which bundle (None when not given);
    `resumable` is False when a resume cannot help (the message then says NO_RESUME).
    """

    def __init__(
        self,
        message: str,
        *,
        round_number: int | None = None,
        bundle: str | None = None,
        resumable: bool = True,
    ) -> None:
        super().__init__(message)
        self.round_number = round_number
        self.bundle = bundle
        self.resumable = resumable


def is_resumable(exc: BaseException) -> bool:
    """Whether a resume may finish a run that stopped with `exc`: False only for a
    RoundFailedError that says a resume would replay the same prompts (the writer records it in
    the manifest as `resumable`)."""
    return not isinstance(exc, RoundFailedError) or exc.resumable


class ContractError(WorkbenchError):
    """One of the workbench's parts broke its contract with another (a bug, named plainly)."""


def one_line(exc: BaseException, limit: int = 2000) -> str:
    """An exception as `Type: message` on one line, at most `limit` characters (for manifests,
    events and the console)."""
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return " ".join(text.split())[:limit]
