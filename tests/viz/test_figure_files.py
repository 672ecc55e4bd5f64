"""Figures saved into bundles and folders: deterministic bytes, verify still passes, refusals."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest
from matplotlib.figure import Figure

from tests.viz.conftest import LEVEL_K
from workbench.errors import BundleError, BundleLockedError
from workbench.results import Bundle, BundleWriter, verify_bundle
from workbench.results.layout import LOCK_FILE, MANIFEST
from workbench.viz import figures
from workbench.viz.figure_files import figure_bytes, save_figure


@pytest.fixture
def level_k_bundle(run_bundle) -> Bundle:
    return run_bundle(policy=LEVEL_K, n_agents=200, rounds=2, agents_per_shard=100)


def test_a_bundle_with_figures_still_verifies(level_k_bundle) -> None:
    manifest = (level_k_bundle.path / MANIFEST).read_bytes()
    paths = save_figure(level_k_bundle, figures.histogram(level_k_bundle), "fig-histogram")
    assert paths == [
        level_k_bundle.path / "figures" / f"fig-histogram.{ext}" for ext in ("png", "pdf")
    ]
    assert paths[0].read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert paths[1].read_bytes().startswith(b"%PDF-")
    save_figure(
        level_k_bundle.path, figures.distribution(level_k_bundle, "education"), "by_education"
    )
    assert [p.name for p in level_k_bundle.figures()] == [
        "by_education.pdf", "by_education.png", "fig-histogram.pdf", "fig-histogram.png"
    ]  # fmt: skip
    report = verify_bundle(level_k_bundle.path)
    assert report.ok, str(report)
    assert (level_k_bundle.path / MANIFEST).read_bytes() == manifest  # figures are not data
    assert not (level_k_bundle.path / LOCK_FILE).exists()  # the lock was given back


def test_the_same_figure_gives_the_same_bytes(level_k_bundle, tmp_path) -> None:
    first = save_figure(
        level_k_bundle, figures.distribution(level_k_bundle, "education", kind="means"), "m"
    )
    data = [p.read_bytes() for p in first]
    rebuilt = figures.distribution(level_k_bundle, "education", kind="means")
    again = save_figure(level_k_bundle, rebuilt, "m")
    assert [p.read_bytes() for p in again] == data  # rebuilt from the bundle, byte for byte
    assert [p.read_bytes() for p in save_figure(tmp_path, rebuilt, "m")] == data  # saved twice
    png, pdf = data
    for text in (b"Matplotlib", b"matplotlib", b"CreationDate", b"Producer"):
        assert text not in png and text not in pdf
    assert figure_bytes(rebuilt, "png") == png


def test_any_folder_takes_figures(tmp_path) -> None:
    fig = Figure()
    fig.add_subplot().plot([0, 1], [1, 0])
    paths = save_figure(tmp_path, fig, "line")
    assert paths == [tmp_path / "figures" / "line.png", tmp_path / "figures" / "line.pdf"]
    assert not (tmp_path / LOCK_FILE).exists()  # no lock outside a bundle


def test_holoviews_objects_are_rendered_with_matplotlib(tmp_path) -> None:
    import holoviews as hv
    import holoviews.plotting.bokeh  # noqa: F401  (the backend a notebook would choose)

    hv.Store.set_current_backend("bokeh")
    curve = hv.Curve([(1, 30.0), (2, 20.0)], "round", "mean")
    overlay = curve * hv.HLine(0)
    paths = save_figure(tmp_path, overlay, "trajectory")
    assert hv.Store.current_backend == "bokeh"  # the notebook's backend is untouched
    assert paths[0].read_bytes().startswith(b"\x89PNG")
    assert figure_bytes(overlay, "pdf") == paths[1].read_bytes()  # deterministic too


@pytest.mark.parametrize(
    "name", ["fig.png", "../escape", "a b", "", ".hidden", "x" * 101, "über", 5, None]
)
def test_a_name_is_a_plain_file_stem(tmp_path, name) -> None:
    with pytest.raises(ValueError, match=r"is not a plain file stem; use 1-100 letters"):
        save_figure(tmp_path, Figure(), name)
    assert not (tmp_path / "figures").exists()


def test_the_error_names_the_stem_to_give(tmp_path) -> None:
    with pytest.raises(ValueError, match=r"give the stem alone, e.g. 'fig5'"):
        save_figure(tmp_path, Figure(), "fig5.pdf")


def test_a_target_that_is_not_a_folder(tmp_path) -> None:
    file = tmp_path / "notes.txt"
    file.write_text("x")
    with pytest.raises(BundleError, match=r"notes.txt is not a folder; give a bundle or an"):
        save_figure(file, Figure(), "x")
    with pytest.raises(BundleError, match=r"missing does not exist"):
        save_figure(tmp_path / "missing", Figure(), "x")


def test_what_is_not_a_figure(tmp_path) -> None:
    with pytest.raises(TypeError, match=r"expected a matplotlib Figure or a HoloViews object"):
        save_figure(tmp_path, "a figure", "x")


def test_a_bundle_being_written_is_refused(make_config, tmp_path) -> None:
    with BundleWriter(tmp_path, make_config(n_agents=2, rounds=1), run_id="live") as writer:
        with pytest.raises(BundleLockedError, match=r"live: being written by pid"):
            save_figure(writer.path, Figure(), "early")
        assert not (writer.path / "figures" / "early.png").exists()
        writer.finish()
    save_figure(tmp_path / "live", Figure(), "after")  # finished: the lock is free


def test_another_live_process_holding_the_lock_is_refused(level_k_bundle) -> None:
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock = {"pid": other.pid, "host": socket.gethostname(), "started_at": "now"}
        (level_k_bundle.path / LOCK_FILE).write_text(json.dumps(lock))
        with pytest.raises(BundleLockedError, match=rf"being written by pid {other.pid}"):
            save_figure(level_k_bundle, Figure(), "x")
    finally:
        other.kill()
        other.wait()
    save_figure(level_k_bundle, Figure(), "x")  # the holder is gone: its stale lock is taken over
    assert not (level_k_bundle.path / LOCK_FILE).exists()


def test_figures_lists_plain_files_and_refuses_links(level_k_bundle) -> None:
    folder = level_k_bundle.path / "figures"
    save_figure(level_k_bundle, Figure(), "a")
    (folder / ".a.png.1234.tmp").write_bytes(b"half")  # a write in progress
    assert [p.name for p in level_k_bundle.figures()] == ["a.pdf", "a.png"]
    os.symlink(folder / "a.png", folder / "b.png")
    with pytest.raises(BundleError, match=r"b.png: is a symbolic link"):
        level_k_bundle.figures()
    report = verify_bundle(level_k_bundle.path)
    assert not report.ok and "figures/b.png: is a symbolic link" in str(report)
    outside = level_k_bundle.path.parent / "outside.png"
    outside.write_bytes(b"keep")
    os.unlink(folder / "b.png")
    os.symlink(outside, folder / "c.png")
    with pytest.raises(BundleError, match=r"c.png: is a symbolic link"):
        save_figure(level_k_bundle, Figure(), "c")
    assert outside.read_bytes() == b"keep"  # never written through the link
