"""An import-linter contract type, ``stub_layers``: the layers contract, on the import graph with
the edges of the packages' type stubs added. Loaded by lint-imports only (``pyproject.toml``:
``contract_types``); nothing imports it at run time.

``rmbench.plugins`` declares its names once, in its stub ``__init__.pyi``, and loads each on first
use; import-linter (grimp) reads ``.py`` files only, so to it the package imports nothing, and a
layers contract would pass with the package placed in any layer. This contract reads each stub of
``stubs`` with the parser that loads the names at run time (``rmbench._read_stub``), adds an import
from the package to each module the stub names, and checks the layers on that graph: a name
exported from a layer above the package's is a broken contract, as a static import would be.
"""

from __future__ import annotations

import copy
import importlib

import grimp
from importlinter.contracts.layers import LayersContract
from importlinter.domain import fields
from importlinter.domain.contract import ContractCheck

from rmbench import _read_stub  # type: ignore[attr-defined]  # (rmbench/__init__.pyi declares the public names only)


class StubLayersContract(LayersContract):
    """``type = "stub_layers"``: a layers contract with ``stubs``, the packages (``rmbench.plugins``)
    whose ``__init__.pyi`` declares their lazily loaded names."""

    stubs = fields.ListField(subfield=fields.StringField())

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        graph = copy.deepcopy(graph)  # the other contracts check the graph of the .py files
        for package in self.stubs:  # type: ignore[attr-defined]
            init = importlib.import_module(package).__file__
            assert init is not None and init.endswith("__init__.py"), f"{package}: not a package"
            exports, _ = _read_stub(init + "i")  # __init__.pyi
            for e in exports:
                graph.add_import(importer=package, imported=e.module, line_number=e.line,
                                 line_contents=f"from {e.module} import {e.name} as {e.name}  (__init__.pyi)")
        return super().check(graph, verbose)
