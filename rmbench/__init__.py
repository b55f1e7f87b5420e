"""rmbench: a benchmark harness for reward models that splits accuracy into discrimination
and specificity (arXiv 2606.21795) and measures generalisation under token-level and domain
shift (arXiv 2507.07981).

The public API is what this module exports (``rmbench.__all__``); plugins, scripts and the
examples in README.md and CONTRIBUTING.md use only these names. Everything else (the modules of
``rmbench.core``, ``rmbench.scoring``, ``rmbench.results``...) may move between releases without
notice. Names load on first use, so ``import rmbench`` imports no numpy, torch or subpackage:

* evaluating: :func:`evaluate` (one model, a list of tasks, a written run), :class:`EvalConfig`
  (the pair of :class:`RunSpec`, what a run measures, and :class:`ExecutionSettings`, how it
  runs), :func:`evaluate_models` (several models and their leaderboard), :class:`RMBenchCallback`
  (evaluation during TRL training; loading it imports transformers);
* reading runs: :func:`load_run` (a :class:`RunFolder`: record and rewards), :func:`read_run`
  (the :class:`RunRecord` only), :func:`find_runs`, :func:`load_rewards`, :func:`write_report` with
  :class:`ReportOptions` and :func:`build_report` (the HTML report of runs),
  :func:`compare_runs` (paired bootstrap differences of two runs), :func:`verify_runs` (a
  :class:`Verification`: does a run reproduce a reference?) with :func:`evaluate_on_run_tasks`
  (any model scored on exactly a run's tasks);
* the record types: :class:`RunRecord`, :class:`TaskResult`, :class:`MetricRecord`,
  :class:`Estimate`, :class:`RewardRow`; the data model: :class:`ComparisonGroup`,
  :class:`Message`, :class:`TaskSpec`, :class:`ModelSpec`;
* writing a task: :class:`Task`, :class:`TaskScores` and :func:`grouped` (a score per category
  and in total), :class:`RowSchema`, :class:`RowReader`, :func:`iter_rows`,
  :func:`load_groups`, :func:`load_catalog`, :class:`OfficialLayout`;
* writing a model: :class:`RewardModel`, :class:`ScoreRequest`, :class:`Runtime`,
  :class:`Truncation` and the declared capabilities :class:`TokenizedModel`,
  :class:`StochasticModel`, :class:`CompositeModel`, :class:`GroupContextModel`, :class:`CallingModel`;
* registering: :func:`register_task_kind`, :func:`register_model_kind`, :func:`register_engine`
  with :class:`Engine`, :class:`Backend`, :class:`BackendOptions`, :func:`score_batch` and
  :class:`MemoryRetries`, :func:`register_format` with :class:`OutputFormat` and
  :class:`RenderContext` (a leaderboard output format), :class:`Option` (an option an engine or a
  format declares; ``FormatOption`` is its older name),
  :func:`register_judge_protocol` with :class:`JudgeProtocol` and :class:`Official` (an LLM
  judge's protocol), :func:`register_metric` with :class:`MetricDef`, all in this process (a
  package uses the ``rmbench.tasks`` / ``rmbench.models`` / ``rmbench.engines`` /
  ``rmbench.formats`` / ``rmbench.judge_protocols`` / ``rmbench.metrics`` entry points instead,
  and imports what it needs from :mod:`rmbench.plugins`, the plugin API);
* errors: :class:`RMBenchError` (every user mistake), :class:`ConfigError`, :class:`DataError`.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable
from typing import Any, NamedTuple

__version__ = "0.1.0"


class _Export(NamedTuple):
    """One name a package's type stub declares: ``from module import attribute as name``, under
    the stub's last ``# --- group ---`` marker above it (``""`` before any)."""

    name: str
    module: str
    attribute: str
    group: str
    line: int


_GROUP_MARKER = "# --- "
"""A line of a stub opening a group of its names (``# --- a task kind ---``): the plugin API's
reference table lists the names by these groups."""


def _read_stub(path: str) -> tuple[list[_Export], list[str]]:
    """The exports a type stub declares, in its order, and the names it only annotates
    (``__version__: str``, defined by the module itself).

    The stub is the one declaration of a package's lazily loaded API (scientific-python's SPEC 1,
    ``lazy_loader.attach_stub``): each ``from module import name as name`` line is a name the
    package exports, loaded from ``module`` on first use at run time, and, the ``as`` form being
    PEP 484's explicit re-export, the same name to type checkers, with no ``__all__`` list to
    keep equal. A bare ``from module import name`` would type-check as private, so it is an error
    here, as is any other statement that is not an annotation, a docstring or a comment."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    groups = {i: line[len(_GROUP_MARKER):].strip(" -") for i, line in enumerate(text.splitlines(), 1)
              if line.startswith(_GROUP_MARKER)}
    exports: list[_Export] = []
    annotated: list[str] = []
    for node in ast.parse(text, path).body:
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            group = groups[max((i for i in groups if i < node.lineno), default=0)] if groups else ""
            for alias in node.names:
                if alias.asname != alias.name:
                    raise ImportError(f"{path}:{node.lineno}: write {alias.name!r} as "
                                      f"'{alias.name} as {alias.asname or alias.name}' (an explicit re-export)")
                exports.append(_Export(alias.name, node.module, alias.name, group, node.lineno))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            annotated.append(node.target.id)
        elif not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            raise ImportError(f"{path}:{node.lineno}: an exports stub holds only 'from module import name as "
                              f"name' lines, annotations and docstrings")
    return exports, annotated


def _attach_stub(package: str, file: str, namespace: dict[str, Any]
                ) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """A package's ``__getattr__``, ``__dir__`` and ``__all__`` from its type stub (``file`` with
    the suffix ``.pyi``, read by :func:`_read_stub`): each name loads from its module on first use
    and is then kept in ``namespace`` (the package's globals), so later lookups skip
    ``__getattr__``. Here, not in :mod:`rmbench.registry`, so that ``import rmbench`` imports
    nothing more (``rmbench.plugins`` uses it too)."""
    exports, annotated = _read_stub(file[: -len(".py")] + ".pyi")
    table = {e.name: e for e in exports}

    def get(name: str) -> Any:
        export = table.get(name)
        if export is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(export.module), export.attribute)
        namespace[name] = value
        return value

    def names() -> list[str]:
        return sorted(set(namespace) | set(table))

    return get, names, [*annotated, *table]


# The names are declared once, in the type stub beside this file (rmbench/__init__.pyi), and
# loaded from it: no static import here, since the layers below import this package for
# __version__ and a static import would make every layer depend on every other one.
__getattr__, __dir__, __all__ = _attach_stub(__name__, __file__, globals())
