"""The package layout: subpackages by layer, imports only downward, no import circle, a small
lazy public API that plugins, the scaffold and the docs use (issue 21)."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import json
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from collections import defaultdict
from pathlib import Path

import pytest

import rmbench
import rmbench.plugins

REPO = Path(__file__).parents[2]
PKG = REPO / "rmbench"


def _contracts() -> list[dict]:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]


def _layers() -> tuple[list[list[str]], set[str]]:
    contract = next(c for c in _contracts() if c["type"] in ("layers", "stub_layers"))
    assert contract["containers"] == ["rmbench"] and contract["exhaustive"] is True
    return ([[part.strip() for part in layer.split("|")] for layer in contract["layers"]],
            set(contract["exhaustive_ignores"]))


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Every rmbench module ``path`` imports, lazy (in-function) imports included."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}
    return {m for m in found if m == "rmbench" or m.startswith("rmbench.")}


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PKG.rglob("*.py")}
    return {m: {i for i in _imports(p) if i in modules and i != m} for m, p in modules.items()}


def _top(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_at_most_eight_modules_at_the_top_and_every_subpackage_says_what_it_holds():
    top = sorted(p.name for p in PKG.glob("*.py"))
    assert len(top) <= 8, top
    packages = [p for p in PKG.iterdir() if p.is_dir() and (p / "__init__.py").exists()]
    assert {p.name for p in packages} >= {"core", "models", "tasks", "results", "scoring", "rewrite", "train", "cli"}
    for package in packages:
        doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8")))
        assert doc and "import" in doc.lower(), f"{package.name}/__init__.py: no docstring saying what it may import"


def test_the_layers_contract_places_every_top_level_module_and_package():
    layers, shared = _layers()
    assert len(layers) >= 5
    placed = {name for layer in layers for name in layer} | shared
    present = {p.stem for p in PKG.glob("*.py") if p.stem != "__init__"}
    present |= {p.name for p in PKG.iterdir() if (p / "__init__.py").exists()}
    assert present == placed, f"not in the layers contract: {present - placed}; listed but absent: {placed - present}"


def test_every_import_points_down_the_layers():
    """The import-linter contract, checked here from the source (lazy imports included), so a
    violation fails the suite even where lint-imports is not installed."""
    layers, ignored = _layers()
    shared = ignored - {"__main__"}  # python -m rmbench: the entry point, above every layer
    rank = {name: (i, j) for i, layer in enumerate(layers) for j, name in enumerate(layer)}
    bad = []
    graph = _graph()  # with the plugin API's lazily loaded names, as the stub_layers contract reads them
    graph["rmbench.plugins"] |= {e.module for e in rmbench._read_stub(str(PKG / "plugins" / "__init__.pyi"))[0]}
    for module, imported in graph.items():
        here = _top(module)
        for target in imported:
            there = _top(target)
            if here == "__main__" or there == here or there in shared or not there or there not in rank \
                    or here not in rank:
                if here in shared and there in rank:
                    bad.append(f"{module} (shared) -> {target}")
                continue
            (li, _), (lj, _) = rank[here], rank[there]
            if lj <= li:  # same row of independent layers, or a higher one
                bad.append(f"{module} -> {target}")
    assert bad == []


def _cycle(nodes: set[str], edges: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(edges.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state and (found := visit(m)):
                return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(nodes):
        if n not in state and (found := visit(n)):
            return found
    return None


def test_no_import_circle_between_siblings_at_any_depth():
    """What import-linter's acyclic_siblings contract checks: within every package, its children
    (modules and subpackages, each standing for everything under it) import each other without
    a circle."""
    graph = _graph()
    children: dict[str, set[str]] = defaultdict(set)
    for module in graph:
        parts = module.split(".")
        for depth in range(1, len(parts)):
            children[".".join(parts[:depth])].add(".".join(parts[: depth + 1]))

    def under(module: str, package: str) -> str | None:
        return next((c for c in children[package] if module == c or module.startswith(c + ".")), None)

    for package, kids in children.items():
        edges: dict[str, set[str]] = defaultdict(set)
        for module, imported in graph.items():
            a = under(module, package)
            for target in imported:
                b = under(target, package)
                if a and b and a != b:
                    edges[a].add(b)
        assert _cycle(kids, edges) is None, f"import circle in {package}: {_cycle(kids, edges)}"


def test_the_cycle_finder_finds_a_circle():
    assert _cycle({"a", "b", "c"}, {"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a", "b"}, {"a": {"b"}}) is None


def test_import_rmbench_is_cheap_and_every_public_name_resolves():
    code = ("import sys, rmbench; print(sorted(m for m in sys.modules if m.startswith('rmbench'))); "
            "print('numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "['rmbench']" and out[1] == "False"
    for name in rmbench.__all__:
        assert getattr(rmbench, name) is not None, name
    assert rmbench.Task.__module__ == "rmbench.tasks.base" and rmbench.evaluate.__name__ == "evaluate"
    with pytest.raises(AttributeError, match="no attribute 'not_public'"):
        rmbench.not_public  # noqa: B018
    assert set(rmbench.__all__) <= set(dir(rmbench))


@pytest.mark.parametrize("module", [rmbench, rmbench.plugins], ids=["rmbench", "rmbench.plugins"])
def test_the_type_stub_is_the_one_declaration_of_the_public_names(module):
    """SPEC 1: the stub's ``from X import name as name`` lines are what the package exports at run
    time (``__all__``, ``dir``, each name loaded from X) and, being explicit re-exports, what type
    checkers see; the package's own source names none of them."""
    stub = Path(module.__file__).with_suffix(".pyi")
    tree = ast.parse(stub.read_text(encoding="utf-8"))
    imports = [(n.module, a.name, a.asname) for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names]
    assert imports and all(name == asname for _, name, asname in imports)
    assert not any(isinstance(n, ast.Assign) for n in tree.body)  # no __all__ list beside the imports
    annotated = [n.target.id for n in tree.body if isinstance(n, ast.AnnAssign)]
    assert list(module.__all__) == annotated + [name for _, name, _ in imports]
    assert len(set(module.__all__)) == len(module.__all__)
    assert set(module.__all__) <= set(dir(module))
    for where, name, _ in imports:
        assert getattr(module, name) is getattr(importlib.import_module(where), name), name
    code = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))  # its code: no name, no "module:name"
    docs = {id(n.value) for n in ast.walk(code) if isinstance(n, ast.Expr)}
    words = {n.id for n in ast.walk(code) if isinstance(n, ast.Name)} | {
        w for n in ast.walk(code) if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
        for w in re.findall(r"\w+", n.value)}
    assert not words & {name for _, name, _ in imports}


def test_the_wheel_ships_the_stubs_the_packages_read_at_import():
    data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    for module in (rmbench, rmbench.plugins):
        assert "__init__.pyi" in data[module.__name__] and Path(module.__file__).with_suffix(".pyi").is_file()


def test_a_stub_line_that_would_not_re_export_is_an_error(tmp_path):
    from rmbench import _attach_stub, _read_stub

    (tmp_path / "pkg.pyi").write_text("# --- one ---\nfrom json import dumps as dumps\n"
                                      "# --- two ---\nfrom json import loads as loads\nv: int\n")
    exports, annotated = _read_stub(str(tmp_path / "pkg.pyi"))
    assert [(e.name, e.module, e.group, e.line) for e in exports] == [("dumps", "json", "one", 2),
                                                                      ("loads", "json", "two", 4)]
    assert annotated == ["v"]
    namespace: dict = {"v": 1}
    get, names, all_ = _attach_stub("pkg", str(tmp_path / "pkg.py"), namespace)
    assert all_ == ["v", "dumps", "loads"] and get("loads") is json.loads and namespace["loads"] is json.loads
    assert names() == ["dumps", "loads", "v"]
    with pytest.raises(AttributeError, match="module 'pkg' has no attribute 'dump'"):
        get("dump")
    for line, error in [("from json import dumps", "write 'dumps' as 'dumps as dumps'"),
                        ("from json import dumps as d", "write 'dumps' as 'dumps as d'"),
                        ("__all__ = ['dumps']", "an exports stub holds only 'from module import name as name' lines")]:
        (tmp_path / "bad.pyi").write_text(f"x: int\n{line}\n")
        with pytest.raises(ImportError, match=re.escape(f"bad.pyi:2: {error}")):
            _read_stub(str(tmp_path / "bad.pyi"))


def test_the_layers_contract_reads_the_plugin_stub(tmp_path):
    """lint-imports sees the plugin API's lazily loaded edges (the ``stub_layers`` contract type): with
    ``plugins`` moved down beside ``tasks``, the contract breaks on its stub's import of a task module."""
    pytest.importorskip("importlinter")
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    moved = text.replace('"cli | integrations | plugins"', '"cli | integrations"').replace(
        '"tasks | models",', '"tasks | models | plugins",')
    assert moved != text
    (tmp_path / "pyproject.toml").write_text(moved)
    lint = Path(sys.executable).with_name("lint-imports")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.run([str(lint), str(tmp_path / "pyproject.toml"), "--no-cache"],
                         capture_output=True, text=True, cwd=REPO, env=env)
    assert run.returncode == 1 and "rmbench.plugins is not allowed to import rmbench.tasks" in run.stdout, run.stdout


def test_the_plugin_api_is_cheap_to_import_and_every_name_resolves():
    """``rmbench.plugins``: what a plugin imports, loaded on first use (a format's entry point loads no torch)."""
    code = "import sys, rmbench.plugins; print(sorted(m for m in sys.modules if m.startswith('rmbench')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['rmbench', 'rmbench.plugins']"
    for name in rmbench.plugins.__all__:
        assert getattr(rmbench.plugins, name) is not None, name
    shared = set(rmbench.plugins.__all__) & set(rmbench.__all__)  # one object under both names
    assert all(getattr(rmbench.plugins, n) is getattr(rmbench, n) for n in shared)
    with pytest.raises(AttributeError, match="no attribute 'evaluate'"):
        rmbench.plugins.evaluate  # noqa: B018  (running evaluations is no plugin's business)


def _own_docstring(obj: object) -> str:
    """``obj``'s own docstring: not a base class's, not a dataclass's generated signature."""
    doc = obj.__dict__.get("__doc__") if isinstance(obj, type) else obj.__doc__
    if isinstance(obj, type) and dataclasses.is_dataclass(obj) and (doc or "").startswith(f"{obj.__name__}("):
        return ""
    return (doc or "").strip()


def _undocumented_members(cls: type) -> list[str]:
    """The public methods and fields of ``cls``'s own body without a docstring: a field's is the
    string right below it (which mkdocstrings shows beside it) or the class docstring naming it
    (````name```` or ````name(...)````)."""
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
    out = []
    for node, below in zip(body, body[1:] + [None]):
        if isinstance(node, ast.FunctionDef) and not node.name.startswith("_") and not ast.get_docstring(node):
            out.append(f"{cls.__name__}.{node.name}()")
        elif isinstance(node, ast.AnnAssign) and not ast.unparse(node.target).startswith("_") \
                and not re.search(rf"``{ast.unparse(node.target)}[`(]", _own_docstring(cls)) \
                and not (isinstance(below, ast.Expr) and isinstance(below.value, ast.Constant)):
            out.append(f"{cls.__name__}.{ast.unparse(node.target)}")
    return out


def test_every_name_of_the_plugin_api_has_a_docstring():
    """The API reference a plugin's author reads is made of the docstrings: every name of
    ``rmbench.plugins`` has its own, and each of its classes documents each of its own public
    fields and methods."""
    names = [getattr(rmbench.plugins, n) for n in rmbench.plugins.__all__]
    assert [n.__name__ for n in names if not _own_docstring(n)] == []
    assert [m for c in names if isinstance(c, type) and c.__module__.startswith("rmbench.")
            for m in _undocumented_members(c)] == []


def test_the_docstring_checks_find_what_is_missing():
    @dataclasses.dataclass
    class Bare:
        x: int
        y: int
        """documented"""

        def f(self) -> None:
            pass

        def g(self) -> None:
            """documented"""

    assert not _own_docstring(Bare) and _undocumented_members(Bare) == ["Bare.x", "Bare.f()"]


def test_register_task_and_model_kinds_through_the_public_api():
    from rmbench.models import MODEL_KINDS
    from rmbench.registry import RegistryError
    from rmbench.tasks import TASK_KINDS

    class Pairs(rmbench.Task):
        def groups(self):
            yield rmbench.ComparisonGroup(id="1", prompt="q", responses=("a", "bb"), utilities=(1, 0))

    class Short(rmbench.RewardModel):
        def score(self, batch):
            return [-len(r.response) for r in batch]

    try:
        rmbench.register_task_kind("layout_test_pairs", Pairs, description="two answers")
        rmbench.register_model_kind("layout-test-short", Short)
        run = rmbench.evaluate(rmbench.EvalConfig(model="layout-test-short", tasks=("layout_test_pairs",),
                                                  n_bootstrap=10))
        assert run.value("layout_test_pairs", "pairwise_accuracy") == 1.0
        with pytest.raises(RegistryError, match="duplicate task name 'layout_test_pairs'"):
            rmbench.register_task_kind("layout_test_pairs", Pairs)
    finally:
        TASK_KINDS._entries.pop("layout_test_pairs", None)
        MODEL_KINDS._entries.pop("layout-test-short", None)


PRIVATE_IMPORT = re.compile(r"^\s*(?:from rmbench\.(?!plugins )[\w.]+ import|import rmbench\.(?!plugins$))", re.M)
"""An import of rmbench other than the public ``rmbench`` and ``rmbench.plugins``."""


def test_plugins_the_scaffold_and_the_docs_use_only_the_public_api():
    from rmbench.tasks import scaffold

    texts = {"scaffold LOADER": scaffold.LOADER, "scaffold TEST": scaffold.TEST}
    package = sorted((REPO / "tests" / "plugin_pkg").rglob("*.py"))
    assert len(package) >= 7, "the plugin package of tests/plugins/test_plugins.py is gone"
    texts.update({str(p.relative_to(REPO)): p.read_text(encoding="utf-8") for p in package})
    docs = ["README.md", "CONTRIBUTING.md", "tasks/README.md"] + sorted(
        str(p.relative_to(REPO)) for p in (REPO / "docs").rglob("*.md"))
    for doc in docs:
        blocks = re.findall(r"```(?:python|py)\n(.*?)```", (REPO / doc).read_text(encoding="utf-8"), re.S)
        texts.update({f"{doc} python block {i}": b for i, b in enumerate(blocks)})
    offenders = {name: PRIVATE_IMPORT.findall(text) for name, text in texts.items() if PRIVATE_IMPORT.search(text)}
    assert offenders == {}
    assert re.search(r"^from rmbench import ", scaffold.LOADER, re.M) and re.search(r"^from rmbench import ",
                                                                                    scaffold.TEST, re.M)
