"""The docs site's sources stay true to the code: every environment variable the package uses
is described, the README stays a front page whose links land, and CI builds the site."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _env_reference():
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        from workbench_docs import env_reference
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    return env_reference


def test_every_environment_variable_the_code_uses_is_described() -> None:
    env = _env_reference()
    used_not_described, described_not_used = env.drift()
    assert used_not_described == [], "describe them in docs/_ext/workbench_docs/env_reference.py"
    assert described_not_used == [], "the code no longer uses them: remove their descriptions"
    # the scan finds literals, module constants, typer envvars and names a loop walks
    found = env.found()
    for name in ("WORKBENCH_TOKEN", "RAY_AUTH_TOKEN", "JUPYTER_TOKEN", "WORKBENCH_KEY_POLICY"):
        assert name in found


def test_readme_is_a_front_page_whose_links_land() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    # the two commands, exactly as CI and users run them
    assert "bash .ci/setup && .venv/bin/workbench run workbench/examples/million.yaml" in readme
    assert "bash .ci/setup && .venv/bin/python -m pytest" in readme
    links = re.findall(r"\]\(((?:docs|notebooks)/[^)#\s]+)", readme)
    assert links, "the README links into docs/"
    for link in links:
        assert (ROOT / link).exists(), f"README links to {link}, which does not exist"


def test_ci_builds_the_docs_with_warnings_as_errors() -> None:
    script = (ROOT / ".ci" / "docs").read_text()
    assert "sphinx-build -W --keep-going" in script
    assert "bash .ci/docs" in (ROOT / ".ci" / "run").read_text()


def _notebook(path: Path, *sources: str) -> Path:
    import nbformat

    cells = [nbformat.v4.new_markdown_cell("# a tutorial")]
    cells += [nbformat.v4.new_code_cell(source) for source in sources]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    return path


def test_the_tutorials_show_the_outputs_of_the_test_runs_notebooks(tmp_path: Path) -> None:
    """notebooks/conftest.py keeps each notebook that ran whole under nbval with its outputs;
    the docs build renders that copy while its cells are the stored notebook's, and never the
    outputs of a failed run or of other code."""
    import subprocess

    import nbformat

    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        from workbench_docs.notebooks import EXECUTED, copy_notebooks, rendered_from
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    folder = tmp_path / "notebooks"
    folder.mkdir()
    (folder / "conftest.py").write_text((ROOT / "notebooks" / "conftest.py").read_text())
    good = _notebook(folder / "good.ipynb", "print('hello from nbval')", "6 * 7")
    bad = _notebook(folder / "bad.ipynb", "print('first')", "1 / 0")
    executed = tmp_path / EXECUTED  # where the docs look: the conftest must write there
    executed.mkdir(parents=True)
    (executed / "bad.ipynb").write_text("{}")  # an older run's copy: must not outlive this one
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-c",
         str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT), str(folder)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 1, run.stdout[-2000:]  # bad's second cell fails
    assert sorted(p.name for p in executed.iterdir()) == ["good.ipynb"]
    kept = nbformat.read(executed / "good.ipynb", as_version=4)
    nbformat.validate(kept)
    printed, result = (cell.outputs for cell in kept.cells if cell.cell_type == "code")
    assert printed[0]["text"] == "hello from nbval\n"
    assert result[0]["data"]["text/plain"] == "42"

    assert rendered_from(good, executed) == executed / "good.ipynb"
    assert rendered_from(bad, executed) == bad  # its run failed: shown as stored
    site = tmp_path / "site"
    assert copy_notebooks(folder, site, executed) == {"bad.ipynb": False, "good.ipynb": True}
    assert (site / "good.ipynb").read_bytes() == (executed / "good.ipynb").read_bytes()
    _notebook(good, "print('edited since its run')", "6 * 7")
    assert rendered_from(good, executed) == good  # other code: never its old outputs


def _ext(module: str):
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        return __import__(f"workbench_docs.{module}", fromlist=["_"])
    finally:
        sys.path.remove(str(DOCS / "_ext"))


def test_the_cli_reference_lists_every_command_of_the_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    """The generated page has a section, with its help, for every command and subcommand
    registered on the CLI's typer app (typer may build its click tree with its own copy of
    click: the walk must not care), and the build is told of any it misses."""
    from workbench.cli import app

    cli = _ext("cli_reference")
    warnings: list[str] = []
    text = cli.page(warnings.append)
    assert warnings == []
    on_page = re.findall(r"^#+ `(workbench[^`]*)`$", text, flags=re.M)
    assert sorted(on_page) == sorted(["workbench", *cli.registered(app)])
    assert len(on_page) >= 26  # 8 commands and groups, 17 subcommands when this was written
    some = ("run", "bundles show", "bench noise", "runs follow", "personas sample", "dashboard")
    for name in (f"workbench {command}" for command in some):
        assert name in on_page
        section = text.split(f"`{name}`\n", 1)[1].split("\n#", 1)[0]
        assert f"Usage: {name} " in section  # its own help, not its parent's
    # a walk that stops at the root (as `isinstance(command, click.Group)` did, typer's click
    # not being click) is a build warning naming what the page lacks
    monkeypatch.setattr(cli, "is_group", lambda command: False)
    cli.page(warnings.append)
    (told,) = warnings
    assert "missed workbench bench" in told and "workbench runs follow" in told


def test_the_docs_keep_double_dashes_literal() -> None:
    """`--estimate` must paste as two hyphens: Sphinx's smart quotes would turn `--` outside
    code into an en dash, so they are off; and no page spells a flag with a typed dash."""
    import runpy

    conf = runpy.run_path(str(DOCS / "conf.py"))
    assert conf.get("smartquotes") is False
    pages = [*DOCS.rglob("*.md"), ROOT / "README.md"]
    pages = [p for p in pages if "_build" not in p.parts and "generated" not in p.parts]
    dashes = re.compile(r"[\u2012-\u2015\u2212]{1,2}[a-z][a-z-]+")  # figure, en, em dashes, minus
    typed = [f"{p.relative_to(ROOT)}: {m.group(0)!r}" for p in pages
             for m in dashes.finditer(p.read_text())]  # fmt: skip
    assert typed == [], "write flags with ASCII hyphens"


def test_the_build_executes_each_notebook_without_a_matching_executed_copy(
    tmp_path: Path,
) -> None:
    """A fresh docs build runs each notebook that has no executed copy with its cells (in a
    kernel of this Python, in the notebook's folder), keeps it for the next build, and never
    runs one twice; a notebook that fails is told and rendered as stored."""
    import nbformat

    nb = _ext("notebooks")
    folder = tmp_path / "notebooks"
    folder.mkdir()
    (folder / "data.txt").write_text("read from the notebook's folder")
    fresh = _notebook(folder / "a.ipynb", "import sys; print(sys.executable)",
                      "print(open('data.txt').read())")  # fmt: skip
    failing = _notebook(folder / "b.ipynb", "1 / 0")
    kept = _notebook(folder / "c.ipynb", "print('ran before')")
    executed = tmp_path / "executed"
    executed.mkdir()
    (executed / "c.ipynb").write_bytes(kept.read_bytes())  # a copy with its cells: reused

    logged: list[str] = []
    warned: list[str] = []
    ran = nb.execute_missing([fresh, failing, kept], executed, logged.append, warned.append)
    assert ran == ["a.ipynb"]
    assert sorted(p.name for p in executed.iterdir()) == ["a.ipynb", "c.ipynb"]
    (where, data) = (c.outputs for c in nbformat.read(executed / "a.ipynb", 4).cells
                     if c.cell_type == "code")  # fmt: skip
    assert Path(where[0]["text"].strip()) == Path(sys.executable)
    assert data[0]["text"] == "read from the notebook's folder\n"
    (message,) = warned
    assert message.startswith("b.ipynb failed to run") and "ZeroDivisionError" in message
    assert "\x1b" not in message  # the traceback's terminal colours left out
    assert nb.copy_notebooks(folder, tmp_path / "site", executed) == {
        "a.ipynb": True, "b.ipynb": False, "c.ipynb": True}  # fmt: skip
    # the next build runs nothing that ran whole
    assert nb.execute_missing([fresh, kept], executed, logged.append, warned.append) == []


def test_the_architecture_page_lists_every_module_under_its_floor(tmp_path: Path) -> None:
    """The module tables are generated from the package: every module of `workbench/`, a
    package as its folder, each with its docstring's first sentence under the floor of the
    layers contract it belongs to; one in no floor is listed apart, not dropped."""
    mod = _ext("module_reference")
    warnings: list[str] = []
    text = mod.page(warnings.append)
    assert warnings == []
    listed = re.findall(r"^\| `([^`]+)` \| (.*) \|$", text, flags=re.M)
    package = ROOT / "workbench"
    every = {p.relative_to(package).as_posix() for p in package.rglob("*.py")}
    every = {n.removesuffix("__init__.py") if n.endswith("__init__.py") else n for n in every}
    every.discard("")
    assert sorted(name for name, _ in listed) == sorted(every)
    assert all(summary for _, summary in listed)
    assert ("llm/distribution/walk.py", mod.summary(package / "llm/distribution/walk.py")) in listed
    floors = mod.floors_diagram(warnings.append)
    assert warnings == [] and floors.splitlines()[1].startswith("cli ")
    page = (DOCS / "design" / "architecture.md").read_text()
    for generated in ("floors.md", "modules.md"):
        assert f"{{include}} ../reference/generated/parts/{generated}" in page
    # the floors come from the contract, in its order; a module in no floor is shown apart
    fake = tmp_path / "workbench"
    for name in ("top.py", "low/__init__.py", "low/deep/mod.py", "stray.py"):
        (fake / name).parent.mkdir(parents=True, exist_ok=True)
        (fake / name).write_text(f'"""{name} holds. More."""\n')
    toml = tmp_path / "pyproject.toml"
    toml.write_text('[[tool.importlinter.contracts]]\nname = "x"\ntype = "layers"\n'
                    'containers = ["workbench"]\nlayers = ["top", "(low)"]\n')  # fmt: skip
    assert mod.grouped(fake, toml) == {
        "top": ["top.py"],
        "low": ["low/", "low/deep/mod.py"],
        mod.OUTSIDE: ["stray.py"],
    }
    assert mod.summary(fake / "stray.py") == "stray.py holds."


def test_the_bundle_layout_is_generated_from_the_layout_module() -> None:
    """Every file and folder `results/layout.py` names is on the generated layout table, with
    its own docstring there, and the bundles design page shows that table, not a hand list."""
    from workbench.results import layout

    bundle = _ext("bundle_reference")
    warnings: list[str] = []
    table = bundle.layout_table(warnings.append)
    assert warnings == []
    docs = bundle.attribute_docs(layout)
    names = [name for name, _ in bundle.files()]
    assert {"MANIFEST", "EXACT_DIR", "RESPONSES_DIR", "LOCK_FILE"} <= set(names)
    for name, value in bundle.files():
        (row,) = [line for line in table.splitlines() if f"| `{name}` |" in line]
        assert f"`{value}" in row and docs[name] in row
    assert "`exact/round-1/prompts.parquet`" in table  # from exact_paths
    assert "{include} ../reference/generated/parts/bundle-layout.md" in (
        DOCS / "design" / "bundles.md").read_text()  # fmt: skip
    assert "{include} parts/bundle-layout.md" in bundle.page(warnings.append)


def test_the_errors_page_lists_every_error_class_with_its_exit_status() -> None:
    """The errors page draws the tree from the classes of `workbench/errors.py` and gives each
    its docstring and the exit status the CLI uses for it."""
    from workbench import errors

    page = _ext("errors_reference")
    warnings: list[str] = []
    text = page.page(warnings.append)
    assert warnings == []
    classes = [v for v in vars(errors).values()
               if isinstance(v, type) and issubclass(v, errors.WorkbenchError)]  # fmt: skip
    assert len(classes) >= 6
    tree = text.split("```text\n", 1)[1].split("```", 1)[0].split()
    assert sorted(tree) == sorted(c.__name__ for c in classes)
    for cls in classes:
        section = text.split(f"## `{cls.__name__}`\n", 1)[1].split("\n## ", 1)[0]
        assert f"exit status {cls.exit_status}" in section
        assert " ".join(cls.__doc__.split()[:6]) in " ".join(section.split())
    assert f"| `EXIT_STATUS_FAILED_RUN` | `{errors.EXIT_STATUS_FAILED_RUN}` |" in text
    assert "generated/errors" in (DOCS / "reference" / "index.md").read_text()


def test_the_api_reference_documents_the_node_scorer_with_the_fixed_logit_example() -> None:
    """`NodeScorer`, the groups, the nodes, the walk and `draw_answers` are autodoc'ed where the
    code defines them, and the test suite's fixed-logit scorer is shown as the example."""
    dist = _ext("distribution_reference")
    warnings: list[str] = []
    text = dist.page(warnings.append)
    assert warnings == []
    where = r"^\.\. auto(class|function):: workbench\.llm\.distribution\.[\w.]+\."
    for name in ("NodeScorer", "PromptGroup", "Node", "walk", "draw_answers"):
        assert re.search(where + name + "$", text, flags=re.M), name
    assert f"class {dist.EXAMPLE[0]}(" in text and "def logits(" in text
    assert "EmbeddedNodeScorer" in text and "ServedNodeScorer" in text
    assert "{include} ../generated/parts/api-distribution.md" in (
        DOCS / "reference" / "api" / "llm.md").read_text()  # fmt: skip


def prose_and_code(page: Path) -> set[str]:
    """A page's lines, stripped, leaving out the commands of its shell blocks (a command to
    type may stand on every page that needs it)."""
    lines, shell = set(), False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            shell = line.startswith("```bash")
        elif not shell:
            lines.add(line.strip())
    return lines


def test_no_long_line_stands_verbatim_on_two_pages() -> None:
    """A fact is stated on one page and linked from the others: no line of prose or code longer
    than 60 characters appears on two pages of the docs (the README, a front page, may repeat
    the docs; shell commands may stand wherever they are typed)."""
    pages = [p for p in DOCS.rglob("*.md") if "_build" not in p.parts
             and "generated" not in p.parts and "notebooks" not in p.parts]  # fmt: skip
    seen: dict[str, str] = {}
    repeated = []
    for page in sorted(pages):
        for line in prose_and_code(page):
            if len(line) > 60:
                if line in seen:
                    repeated.append(f"{seen[line]} and {page.relative_to(DOCS)}: {line[:60]}")
                seen.setdefault(line, str(page.relative_to(DOCS)))
    assert repeated == []


def test_the_pages_name_only_files_that_exist() -> None:
    """A module, test or script a page names by its path (`tests/llm/test_one_law.py`,
    `llm/distribution/walk.py`) exists, at the repository's root or in the package: a rename
    that forgets a page fails here, not in a reader's hands."""
    made_by_runs = {"notebooks/results/", "tests/artifacts/screenshots/"}
    pages = [p for p in DOCS.rglob("*.md") if "_build" not in p.parts
             and "generated" not in p.parts] + [ROOT / "README.md"]  # fmt: skip
    span = re.compile(r"`([\w.-]+(?:/[\w.-]+)+/?)`")
    missing = []
    for page in pages:
        for path in span.findall(page.read_text()):
            named = path.endswith(".py") or path.startswith(("workbench/", "tests/", ".ci/"))
            if named and path not in made_by_runs:
                if not any((base / path).exists() for base in (ROOT, ROOT / "workbench")):
                    missing.append(f"{page.relative_to(ROOT)}: {path}")
    assert missing == []


def test_the_distribution_mode_page_states_the_laws_order_as_the_code_applies_it() -> None:
    """The page names the sampling law's steps once, in `config.sampling.ORDER`'s order (it
    once said two orders), and cites no test count that drifts."""
    from workbench.config.sampling import ORDER

    text = " ".join((DOCS / "design" / "distribution-mode.md").read_text().split())
    (stated,) = re.findall(r"It applies in vLLM's order: (.*?) Every path draws by it", text)
    at = [stated.index(step) for step in ORDER]
    assert at == sorted(at), stated
    assert text.count("vLLM's order") == 1  # stated once, so never twice differently
    counts = r"tests/[\w/]+\.py`[^.]{0,300}?\b\d[\d,]* (?:answers|agents)\b"
    assert not re.search(counts, text), "a test's size is in its docstring, not here"
