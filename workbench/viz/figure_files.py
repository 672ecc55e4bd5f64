"""Figures saved as files: PNG and PDF with deterministic bytes, into a bundle or any folder.

`save_figure(target, figure, name)` writes `<target>/figures/<name>.png` and `.pdf`. The same
figure gives the same bytes every time: no dates, no software versions, a fixed dpi and
matplotlib's own font. A figure is a matplotlib Figure or a HoloViews object, rendered with
HoloViews' matplotlib backend without changing the backend a notebook chose.

figures/ is outside a bundle's data (never hashed into the manifest), so a finished bundle
still verifies after figures are saved into it; `Bundle.figures()` lists them. Saving into a
bundle takes the bundle's writer lock for the moment of the write, so it is refused while
another live process (or a live writer in this one) is writing that bundle.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import matplotlib as mpl
from matplotlib.figure import Figure

from workbench._files import atomic_write_bytes
from workbench.errors import BundleError
from workbench.results import Bundle
from workbench.results.layout import FIGURES_DIR, MANIFEST, bundle_file
from workbench.results.lock import acquire, release

FORMATS: tuple[str, ...] = ("png", "pdf")
"""The files `save_figure` writes for each figure, in this order."""

DPI = 200
"""Resolution of saved PNGs (the PDF is vector; its embedded images use it too)."""

DISPLAY_DPI = 100
"""Resolution of a figure shown in a notebook."""

NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$")
"""A figure's name: a plain file stem (letters, digits, '-' and '_'; no extension, no dots)."""

_METADATA: dict[str, dict[str, None]] = {
    # None drops matplotlib's default entries: its version and, for PDF, the creation date
    "png": {"Software": None},
    "pdf": {"Creator": None, "Producer": None, "CreationDate": None},
}

_SAVE_RC: dict[str, Any] = {
    "pdf.fonttype": 42,  # TrueType: text stays text (selectable, editable) in the PDF
    # the figure as it is, whatever the session's savefig settings
    "savefig.bbox": None,
    "savefig.facecolor": "auto",
    "savefig.edgecolor": "auto",
    "savefig.transparent": False,
}


def check_name(name: Any) -> str:
    """`name` when it is a plain file stem; ValueError saying what a name may hold."""
    if isinstance(name, str) and NAME_PATTERN.fullmatch(name):
        return name
    hint = ""
    if isinstance(name, str) and any(c in name for c in "./\\"):
        stem = Path(name.replace("\\", "/")).stem
        hint = f" (give the stem alone, e.g. {stem!r}: save_figure adds .png and .pdf)"
    raise ValueError(
        f"name: {name!r} is not a plain file stem; use 1-100 letters, digits, '-' or '_', "
        f"starting with a letter or digit{hint}"
    )


def as_matplotlib(figure: Any) -> Figure:
    """A matplotlib Figure from a Figure or a HoloViews object (its matplotlib rendering).

    The matplotlib backend is registered with HoloViews if it is not yet; the notebook's
    current HoloViews backend (often bokeh) stays what it was.
    """
    if isinstance(figure, Figure):
        return figure
    if type(figure).__module__.split(".")[0] == "holoviews":
        import holoviews as hv
        import holoviews.plotting.mpl  # noqa: F401  (registers the backend, keeps the current one)

        current = hv.Store.current_backend
        try:
            rendered = hv.render(figure, backend="matplotlib")
        finally:
            if hv.Store.current_backend != current:
                hv.Store.set_current_backend(current)
        if not isinstance(rendered, Figure):
            raise TypeError(f"figure: HoloViews rendered {type(rendered).__name__}, not a Figure")
        return rendered
    raise TypeError(
        "figure: expected a matplotlib Figure or a HoloViews object, got "
        f"{type(figure).__module__}.{type(figure).__name__}"
    )


def figure_bytes(figure: Any, fmt: str, dpi: int = DPI) -> bytes:
    """The figure as PNG or PDF bytes, the same for the same figure (no dates or versions)."""
    if fmt not in FORMATS:
        raise ValueError(f"fmt: {fmt!r} is not one of {', '.join(FORMATS)}")
    buffer = io.BytesIO()
    with mpl.rc_context(_SAVE_RC):
        as_matplotlib(figure).savefig(buffer, format=fmt, dpi=dpi, metadata=_METADATA[fmt])
    return buffer.getvalue()


def _folder(target: Bundle | str | Path) -> tuple[Path, bool]:
    """(folder, whether it is a bundle) of `target`; BundleError when it is not a folder."""
    path = target.path if isinstance(target, Bundle) else Path(target)
    if not path.is_dir():
        what = "does not exist" if not path.exists() else "is not a folder"
        raise BundleError(
            f"target: {path} {what}; give a bundle or an existing folder (figures go into its "
            f"{FIGURES_DIR}/)"
        )
    return path, isinstance(target, Bundle) or (path / MANIFEST).is_file()


class _Saving:
    """The holder of a bundle's writer lock while figures are written into it."""


def save_figure(target: Bundle | str | Path, figure: Any, name: str) -> list[Path]:
    """Write `figure` as `<target>/figures/<name>.png` and `.pdf`; the paths written.

    `target` is a bundle (a Bundle or its folder: it still verifies afterwards) or any existing
    folder. `figure` is a matplotlib Figure or a HoloViews object. Each file is written
    atomically and overwrites an earlier one of that name. BundleLockedError while another
    live writer holds the bundle; BundleError when `target` is not a folder or a figures/
    entry is a symbolic link; ValueError for a name that is not a plain file stem.
    """
    stem = check_name(name)
    folder, is_bundle = _folder(target)
    data = {fmt: figure_bytes(figure, fmt) for fmt in FORMATS}  # rendered before any write
    holder = _Saving()
    try:
        lock = acquire(folder, holder) if is_bundle else None
    except OSError as exc:
        raise BundleError(f"{folder}: cannot lock the bundle to save a figure ({exc})") from None
    try:
        paths = [bundle_file(folder, f"{FIGURES_DIR}/{stem}.{fmt}") for fmt in FORMATS]
        try:
            return [atomic_write_bytes(path, data[path.suffix[1:]]) for path in paths]
        except OSError as exc:
            raise BundleError(f"{folder / FIGURES_DIR}: cannot write the figure ({exc})") from None
    finally:
        if lock is not None:
            release(lock, holder)
