"""The dashboard's download route on a real Tornado server behind the real access gate: a
bundle's tables as CSV and Parquet files, nothing outside the workspace, nothing without the
token."""

from __future__ import annotations

import asyncio
import io
import os
from pathlib import Path

import pandas as pd
import pytest
from ports import free_port
from run_configs import run_config
from tornado.httpclient import AsyncHTTPClient, HTTPResponse
from tornado.web import Application

from workbench.results import Bundle
from workbench.results.export import tidy_table
from workbench.runtime import Simulation
from workbench.ui.download_links import DOWNLOADS, download_href
from workbench.ui.server.access import Access, guard
from workbench.ui.server.downloads import download_route

TOKEN = "t" * 32


@pytest.fixture(scope="module")
def workspace(education_spec, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace holding results/<one level-k bundle>, a folder that is no bundle, a link to
    a bundle outside the workspace, and that outside bundle."""
    root = tmp_path_factory.mktemp("downloads")
    config = run_config(
        education_spec, name="dl", seed=3, n_agents=30, policy={"kind": "level_k", "noise_sd": 4.0}
    )
    work = root / "work"
    for out in (work / "results", root / "outside"):
        Simulation(config).run(out_dir=out, progress=False)
    (work / "results" / "plain").mkdir()
    (outside,) = (root / "outside").iterdir()
    os.symlink(outside, work / "results" / "escape")
    return work


def fetch(served: tuple[int, asyncio.AbstractEventLoop], path: str, **headers: str) -> HTTPResponse:
    """GET `path` from the served route (errors as responses)."""
    port, loop = served

    async def get() -> HTTPResponse:
        client = AsyncHTTPClient(force_instance=True)
        try:
            url = f"http://127.0.0.1:{port}{path}"
            return await client.fetch(url, headers=headers, raise_error=False)
        finally:
            client.close()

    return loop.run_until_complete(get())


@pytest.fixture(scope="module")
def served(workspace: Path):
    """The route in a Tornado app guarded like the dashboard (token mode), on a free port."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    port = free_port()
    app = Application([download_route(workspace)])
    guard(app, Access.for_server("token", token=TOKEN, address="127.0.0.1", port=port))
    server = app.listen(port, address="127.0.0.1")
    yield port, loop
    server.stop()
    loop.close()
    asyncio.set_event_loop(None)


def bundle_href(workspace: Path, table: str, fmt: str) -> str:
    (path,) = [p for p in (workspace / "results").iterdir() if p.name not in ("plain", "escape")]
    return "/" + download_href(DOWNLOADS, workspace, path, table, fmt)


@pytest.mark.parametrize("table", ["responses", "rounds", "personas"])
def test_a_table_downloads_as_csv_and_parquet_files(workspace, served, table) -> None:
    (bundle,) = [Bundle.open(p) for p in (workspace / "results").iterdir() if p.name[0] == "d"]
    expected = getattr(bundle, table)()
    auth = {"Authorization": f"token {TOKEN}"}
    parquet = fetch(served, bundle_href(workspace, table, "parquet"), **auth)
    assert parquet.code == 200, parquet.body
    assert parquet.headers["Content-Disposition"] == (
        f'attachment; filename="{bundle.run_id}-{table}.parquet"'
    )
    pd.testing.assert_frame_equal(pd.read_parquet(io.BytesIO(parquet.body)), expected)
    csv = fetch(served, bundle_href(workspace, table, "csv"), **auth)
    assert csv.code == 200 and csv.headers["Content-Type"].startswith("text/csv")
    pd.testing.assert_frame_equal(
        pd.read_csv(io.BytesIO(csv.body)), expected, check_dtype=False, check_categorical=False
    )


def test_the_tidy_table_downloads_written_a_round_at_a_time(workspace, served) -> None:
    """One row per agent and round with the persona columns, as `workbench bundles export`
    writes it (through a private temporary file, gone after the download)."""
    (bundle,) = [Bundle.open(p) for p in (workspace / "results").iterdir() if p.name[0] == "d"]
    auth = {"Authorization": f"token {TOKEN}"}
    parquet = fetch(served, bundle_href(workspace, "tidy", "parquet"), **auth)
    assert parquet.code == 200, parquet.body
    assert parquet.headers["Content-Disposition"] == (
        f'attachment; filename="{bundle.run_id}-tidy.parquet"'
    )
    got = pd.read_parquet(io.BytesIO(parquet.body))
    pd.testing.assert_frame_equal(got, tidy_table(bundle))
    assert len(got) == bundle.config.n_agents * bundle.rounds_count
    csv = fetch(served, bundle_href(workspace, "tidy", "csv"), **auth)
    assert csv.code == 200 and int(csv.headers["Content-Length"]) == len(csv.body)
    assert len(pd.read_csv(io.BytesIO(csv.body))) == len(got)
    assert fetch(served, "/workbench-downloads/..%2F..%2Fetc/tidy.csv", **auth).code == 404


def test_the_gate_stands_in_front_of_the_route(workspace, served) -> None:
    href = bundle_href(workspace, "rounds", "csv")
    assert fetch(served, href).code == 401  # no token
    assert fetch(served, href, Authorization="token wrong-token-wrong-token").code == 401
    evil = {"Authorization": f"token {TOKEN}", "Host": f"evil.example:{served[0]}"}
    assert fetch(served, href, **evil).code == 403  # DNS rebinding
    origin = {"Authorization": f"token {TOKEN}", "Origin": "http://evil.example"}
    assert fetch(served, href, **origin).code == 403


@pytest.mark.parametrize(
    "path",
    [
        "..%2F..%2Fetc/rounds.csv",  # out by `..`, encoded
        "results/..%2F..%2F..%2Fetc/rounds.csv",
        "%2Fetc/rounds.csv",  # an absolute path
        "results/escape/rounds.csv",  # a link inside to a bundle outside
        "results/plain/rounds.csv",  # a folder that is no bundle
        "results/nothing/rounds.csv",
        "results/rounds.csv",
    ],
)
def test_nothing_outside_a_bundle_of_the_workspace_is_served(workspace, served, path) -> None:
    reply = fetch(served, f"/{DOWNLOADS}/{path}", Authorization=f"token {TOKEN}")
    assert reply.code == 404, reply.body
    assert str(workspace) not in reply.body.decode(errors="replace")


def test_only_the_bundle_tables_and_formats_are_routes(workspace, served) -> None:
    href = bundle_href(workspace, "rounds", "csv")
    for other in (href.replace("rounds.csv", "manifest.json"), href.replace(".csv", ".pkl")):
        assert fetch(served, other, Authorization=f"token {TOKEN}").code == 404
