"""A small generic registry: names map to objects or to lazy ``"module:attr"`` strings.

Heavy imports (torch, transformers) wait until a registered thing is used. Third-party
packages register through Python entry points; duplicate names are an error and an unknown
name answers with "did you mean". Each entry point's name keeps where it came from
(:class:`PluginSource`: its distribution, version and, for an editable or local install, the
sha256 of the module that defines it), so that what a plugin computes is keyed by its code;
``RMBENCH_PLUGINS`` (:func:`plugin_scope`) decides which distributions' entry points load.
Building a spec with its kind's factory: :mod:`rmbench.registry.factories`.

Shared by every layer, it imports no layer (``pyproject.toml``'s contracts): only
:mod:`rmbench.errors`.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import re
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib.metadata import Distribution, entry_points
from pathlib import Path
from typing import Any, Generic, TypeVar

from rmbench.errors import did_you_mean

T = TypeVar("T")


class RegistryError(LookupError):
    """An unknown name, a duplicate name, or a plugin that fails to load."""


def import_target(target: str) -> Any:
    """Resolve ``"package.module:attr"`` or ``"path/to/file.py:attr"`` to the object it names."""
    module_name, sep, attr = target.rpartition(":")
    if not sep or not module_name or not attr:
        raise RegistryError(f"{target!r} is not of the form 'module:attr' or 'path/to/file.py:attr'")
    try:
        if module_name.endswith(".py") or "/" in module_name or "\\" in module_name:
            path = Path(module_name).expanduser().resolve()
            if not path.is_file():
                raise RegistryError(f"{target!r}: no such file {path}")
            mod_id = f"rmbench_user_{abs(hash(str(path)))}"
            module = sys.modules.get(mod_id)
            if module is None:
                spec = importlib.util.spec_from_file_location(mod_id, path)
                assert spec is not None and spec.loader is not None
                module = importlib.util.module_from_spec(spec)
                sys.modules[mod_id] = module
                try:
                    spec.loader.exec_module(module)
                except BaseException:
                    del sys.modules[mod_id]
                    raise
        else:
            module = importlib.import_module(module_name)
    except RegistryError:
        raise
    except Exception as exc:  # a broken plugin fails loudly, naming what was loaded
        raise RegistryError(f"could not import {module_name!r} (for {target!r}): {type(exc).__name__}: {exc}") from exc
    obj = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise RegistryError(f"{target!r}: module {module_name!r} has no attribute {attr!r}") from None
    return obj


PLUGINS_VARIABLE = "RMBENCH_PLUGINS"
"""``all`` (the default): every installed distribution's entry points load; ``none``: none do;
``DIST,...``: only those distributions' (names compared as pip does: case, ``-``, ``_`` and ``.`` alike)."""


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def plugin_scope() -> frozenset[str] | None:
    """The distributions whose entry points load, from ``RMBENCH_PLUGINS``: None for all (unset,
    empty or ``all``), an empty set for ``none``, else the normalized names listed."""
    value = os.environ.get(PLUGINS_VARIABLE, "").strip()
    if value.lower() in ("", "all"):
        return None
    if value.lower() == "none":
        return frozenset()
    return frozenset(_normalized(n.strip()) for n in value.split(",") if n.strip())


@dataclass(frozen=True, order=True)
class PluginSource:
    """The installed distribution that registered a name through an entry point, as results.json's
    ``environment.plugins`` records it."""

    name: str
    """The distribution's name (``pip install NAME``)."""
    version: str
    module: str
    """The module the entry point names (``package.module`` of ``package.module:attr``)."""
    sha256: str | None = None
    """sha256 of that module's file, for a distribution installed from a local folder or file
    (editable or not: its ``direct_url.json`` names a ``file:`` URL), whose code may change without
    its version; None for one installed from an index, or a module with no readable file."""

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "version": self.version, "module": self.module, "sha256": self.sha256}


def _local_install(dist: Distribution) -> bool:
    """Whether ``dist`` was installed from a local folder or file (``pip install -e .``, ``pip install ./pkg``)."""
    try:
        text = dist.read_text("direct_url.json")
        return text is not None and str(json.loads(text).get("url", "")).startswith("file:")
    except (OSError, ValueError, AttributeError):
        return False


def _module_sha256(module_name: str) -> str | None:
    """sha256 of the file of an imported module (None: not imported, or no readable file)."""
    module = sys.modules.get(module_name)
    path = getattr(module, "__file__", None)
    if not path:
        return None
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


@dataclass
class _Entry:
    value: Any
    origin: str
    description: str
    loaded: bool
    dist: Distribution | None = None
    """The distribution of an entry point's name; None for a name registered in code."""
    module: str = ""
    """The module an entry point's ``"module:attr"`` names."""
    source: PluginSource | None = None
    described: bool = True
    """False for an entry point until :meth:`Registry.describe` has read its object's own description."""


def _own_description(value: Any) -> str:
    """What ``value`` says of itself: a non-empty ``description`` string attribute, else the
    first paragraph of its docstring as one line; "" when neither."""
    own = getattr(value, "description", None)
    if isinstance(own, str) and own.strip():
        return " ".join(own.split())
    if type(value).__module__ == "builtins" and not callable(value):  # a dict's docstring is dict's
        return ""
    doc = inspect.getdoc(value) or ""
    return " ".join(doc.split("\n\n", 1)[0].split())


class Registry(Generic[T]):
    """Names to objects. Values may be lazy ``"module:attr"`` strings resolved on first ``get``.

    The one registry mechanism: task and model kinds, metrics, row schemas, leaderboard and
    export formats, engines, judge protocols, trackers, model presets and published readers are
    each one ``Registry``. Every entry knows its origin (:meth:`origin`: ``built-in``, the
    ``register_*`` call or the task kind that declared it, or the entry point and its
    distribution; :meth:`source`: the :class:`PluginSource` of an entry point's). ``kind`` and
    ``key``: what every value must be (a class or classes) and the name it must carry
    (``key(value)``), checked when it is registered or, for a lazy one, loaded (one
    :class:`RegistryError` naming its origin). ``same_ok``: registering a name again with an
    equal value is a no-op (a declaration repeated), not a duplicate.
    """

    def __init__(self, what: str, entry_point_group: str | None = None, *,
                 kind: type | tuple[type, ...] | None = None, key: Callable[[Any], str] | None = None,
                 same_ok: bool = False) -> None:
        self.what = what
        self.entry_point_group = entry_point_group
        self.kind = kind
        self.key = key
        self.same_ok = same_ok
        self._entries: dict[str, _Entry] = {}
        self._entry_points_loaded = False

    def register(self, name: str, value: T | str, *, description: str = "", origin: str = "built-in",
                 replace: bool = False, dist: Distribution | None = None) -> None:
        if not name or not isinstance(name, str):
            raise RegistryError(f"a {self.what} name must be a non-empty string, got {name!r}")
        known = self._entries.get(name)
        if known is not None and not replace:
            if self.same_ok and known.loaded and known.value == value:
                return
            raise RegistryError(
                f"duplicate {self.what} name {name!r}: defined by {known.origin} and by {origin}")
        if not isinstance(value, str):
            self._check(name, value, origin)
        module = value.rpartition(":")[0] if isinstance(value, str) else ""
        self._entries[name] = _Entry(value, origin, description, loaded=not isinstance(value, str), dist=dist,
                                     module=module)

    def named(self, name: str | T, value: T | str | None, call: str) -> tuple[str, T | str]:
        """``(name, value)`` of a ``register_*(name, value)`` call; the older one-argument form
        ``register_*(value)`` of a kind whose values carry their name (``key``) takes it from the
        value, with a DeprecationWarning naming the one form."""
        if value is not None:
            if not isinstance(name, str):
                raise RegistryError(f"{call}(name, value, *, description=''): the name first, got {name!r}")
            return name, value
        if isinstance(name, str) or self.key is None:
            raise RegistryError(f"{call}(name, value, *, description=''): no value given for {name!r}")
        own = self.key(name)
        warnings.warn(f"{call}(value) is the older form of {call}({own!r}, value)", DeprecationWarning, stacklevel=3)
        return own, name

    def _check(self, name: str, value: Any, origin: str) -> None:
        """Refuse a value that is not of ``kind`` or does not carry ``name`` (``key``)."""
        wrong_kind = self.kind is not None and not isinstance(value, self.kind)
        if wrong_kind or (self.key is not None and self.key(value) != name):
            kinds = self.kind if isinstance(self.kind, tuple) else (self.kind,) if self.kind else ()
            what = " or ".join(k.__name__ for k in kinds) or "value"
            article = "an" if what[0] in "AEIOU" else "a"
            raise RegistryError(f"{self.what} {name!r} from {origin} is not {article} {what} named {name!r} "
                                f"(got {type(value).__name__} {getattr(value, 'name', '')!r})")

    def unregister(self, name: str) -> None:
        """Remove ``name`` (a test's registration, undone); absent: nothing."""
        self._entries.pop(name, None)

    def decorator(self, name: str, description: str = "") -> Callable[[T], T]:
        def wrap(obj: T) -> T:
            self.register(name, obj, description=description)
            return obj
        return wrap

    def _load_entry_points(self) -> None:
        if self._entry_points_loaded or not self.entry_point_group:
            return
        self._entry_points_loaded = True
        scope = plugin_scope()
        before = dict(self._entries)
        try:
            for ep in entry_points(group=self.entry_point_group):
                dist = getattr(ep, "dist", None)
                if scope is not None and (dist is None or _normalized(dist.name) not in scope):
                    continue  # RMBENCH_PLUGINS leaves this distribution out
                origin = f"entry point {ep.name!r} of {dist.name if dist else 'an installed package'}"
                self.register(ep.name, ep.value, origin=origin, description=f"plugin ({ep.value})", dist=dist)
                self._entries[ep.name].described = False  # describe() reads what it loads
        except RegistryError:  # a clash: asked again, it fails again (never a registry silently without it)
            self._entries, self._entry_points_loaded = before, False
            raise

    def in_order(self) -> list[str]:
        """The names in registration order (the built-in ones as registered, then the rest)."""
        self._load_entry_points()
        return list(self._entries)

    def items(self) -> list[tuple[str, T]]:
        """Every ``(name, value)`` in registration order, each value loaded."""
        self._load_entry_points()
        return [(name, e.value if e.loaded else self.get(name)) for name, e in list(self._entries.items())]

    def origin(self, name: str) -> str:
        """Where ``name`` was registered: ``built-in``, the call or declaration that registered it,
        or ``entry point 'NAME' of DIST`` (its :class:`PluginSource`: :meth:`source`)."""
        return self._entry(name).origin

    def find(self, name: str) -> T | None:
        """The value registered under ``name`` if it is loaded, without listing entry points or
        importing anything; None otherwise (for a check before a registration)."""
        e = self._entries.get(name)
        return e.value if e is not None and e.loaded else None

    def __contains__(self, name: str) -> bool:
        self._load_entry_points()
        return name in self._entries

    def names(self) -> list[str]:
        self._load_entry_points()
        return sorted(self._entries)

    def describe(self, name: str) -> tuple[str, str]:
        """(description, origin) of a name. An entry point's description is its object's own:
        its ``description`` attribute (a task kind's), else its docstring's first paragraph;
        ``plugin (module:attr)`` when it has neither or does not load (``load_error`` says why).
        Reading it imports the plugin's module, as ``load_error`` does."""
        e = self._entry(name)
        if not e.described and e.dist is not None:  # a distribution's entry point: listings load it anyway
            try:
                value = self.get(name)
            except RegistryError:
                return e.description, e.origin
            e.description, e.described = _own_description(value) or e.description, True
        return e.description, e.origin

    def load_error(self, name: str) -> str | None:
        """Whether the entry point ``name`` loads: None when it does (or for a name registered in
        code, which listings do not import), else its error as one line, for listings that show a
        broken plugin as broken (``rmbench tasks list``, ``models list``)."""
        e = self._entry(name)
        if e.dist is None:
            return None
        try:
            self.get(name)
        except RegistryError as exc:
            return " ".join(str(exc).split())
        return None

    def _entry(self, name: str) -> _Entry:
        self._load_entry_points()
        try:
            return self._entries[name]
        except KeyError:
            hint = did_you_mean(name, self._entries)
            known = ", ".join(sorted(self._entries)) or "none"
            raise RegistryError(f"unknown {self.what} {name!r}{hint} (known: {known})") from None

    def get(self, name: str) -> T:
        e = self._entry(name)
        if not e.loaded:
            try:
                value = import_target(e.value)
            except RegistryError as exc:
                raise RegistryError(f"{self.what} {name!r} from {e.origin} failed to load: {exc}") from exc
            self._check(name, value, e.origin)  # a wrong one stays unloaded: asked again, it fails again
            e.value, e.loaded = value, True
        return e.value

    def source(self, name: str) -> PluginSource | None:
        """Where the entry point ``name`` came from (:class:`PluginSource`), its module loaded; None for a
        name registered in code (built-in, ``register_*``) or unknown here (an import target)."""
        self._load_entry_points()
        e = self._entries.get(name)
        if e is None or e.dist is None:
            return None
        if e.source is None:
            self.get(name)  # the module is imported: its file is the one that runs
            e.source = PluginSource(e.dist.name, e.dist.version, e.module,
                                    _module_sha256(e.module) if _local_install(e.dist) else None)
        return e.source

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())
