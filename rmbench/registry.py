"""A small generic registry: names map to objects or to lazy ``"module:attr"`` strings.

Heavy imports (torch, transformers) wait until a registered thing is used. Third-party
packages register through Python entry points; duplicate names are an error and an unknown
name answers with "did you mean". Each entry point's name keeps where it came from
(:class:`PluginSource`: its distribution, version and, for an editable or local install, the
sha256 of the module that defines it), so that what a plugin computes is keyed by its code;
``RMBENCH_PLUGINS`` (:func:`plugin_scope`) decides which distributions' entry points load.
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
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from importlib.metadata import Distribution, entry_points
from pathlib import Path
from typing import Any, Generic, TypeVar

from rmbench.errors import ConfigError, did_you_mean

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
    """Names to objects. Values may be lazy ``"module:attr"`` strings resolved on first ``get``."""

    def __init__(self, what: str, entry_point_group: str | None = None) -> None:
        self.what = what
        self.entry_point_group = entry_point_group
        self._entries: dict[str, _Entry] = {}
        self._entry_points_loaded = False

    def register(self, name: str, value: T | str, *, description: str = "", origin: str = "built-in",
                 replace: bool = False, dist: Distribution | None = None) -> None:
        if not name or not isinstance(name, str):
            raise RegistryError(f"a {self.what} name must be a non-empty string, got {name!r}")
        if name in self._entries and not replace:
            raise RegistryError(
                f"duplicate {self.what} name {name!r}: defined by {self._entries[name].origin} and by {origin}")
        module = value.rpartition(":")[0] if isinstance(value, str) else ""
        self._entries[name] = _Entry(value, origin, description, loaded=not isinstance(value, str), dist=dist,
                                     module=module)

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
        for ep in entry_points(group=self.entry_point_group):
            dist = getattr(ep, "dist", None)
            if scope is not None and (dist is None or _normalized(dist.name) not in scope):
                continue  # RMBENCH_PLUGINS leaves this distribution out
            origin = f"entry point {ep.name!r} of {dist.name if dist else 'an installed package'}"
            self.register(ep.name, ep.value, origin=origin, description=f"plugin ({ep.value})", dist=dist)
            self._entries[ep.name].described = False  # describe() reads what it loads

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
                e.value = import_target(e.value)
            except RegistryError as exc:
                raise RegistryError(f"{self.what} {name!r} from {e.origin} failed to load: {exc}") from exc
            e.loaded = True
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


def keyword_parameters(factory: Any) -> tuple[str, ...] | None:
    """The arguments ``factory`` (a class, a function or another callable) takes by keyword, in
    its signature's order; None when it takes any keyword (``**kwargs``) or has no readable signature.

    A class is read from its own ``__init__``: a ``__new__`` taking ``*args, **kwargs`` to record
    them, as :class:`~rmbench.models.base.RewardModel`'s does, would hide the arguments from
    ``inspect.signature(cls)``. A class whose ``__init__`` is ``object``'s takes none (Python would
    drop them silently past such a ``__new__``), unless its ``__new__`` names its own.
    """
    P = inspect.Parameter
    target, passes_on = factory, False
    if inspect.isclass(factory):
        if factory.__init__ is not object.__init__:
            target = factory.__init__
        elif factory.__new__ is object.__new__:
            return ()
        else:  # its __new__'s own arguments; none when it passes them on to object's __init__
            target, passes_on = factory.__new__, True
    try:
        params = list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        return None
    if target is not factory and params and params[0].kind in (P.POSITIONAL_ONLY, P.POSITIONAL_OR_KEYWORD):
        params = params[1:]  # self, or __new__'s cls
    named = tuple(p.name for p in params if p.kind in (P.POSITIONAL_OR_KEYWORD, P.KEYWORD_ONLY))
    if any(p.kind is P.VAR_KEYWORD for p in params):
        return () if passes_on and not named else None
    return named


def check_arguments(factory: Any, given: Iterable[str], *, what: str, name: str, kind: str,
                    reserved: Collection[str] = ()) -> None:
    """Refuse, in one line, the arguments in ``given`` that ``factory`` does not take (before
    anything is built: no weights loaded, no server called). The message names the ``what``
    (``model``, ``task``) ``name``, the wrong keys, the kind, a did-you-mean and the keys the kind
    takes, read from its signature (:func:`keyword_parameters`), so a plugin's kind gets it too.
    ``reserved``: arguments the caller fills itself (a model's ``runtime``), never given in a spec.
    A factory that takes ``**kwargs`` is not checked."""
    accepted = keyword_parameters(factory)
    if accepted is None:
        return
    valid = [p for p in accepted if p not in reserved]
    unknown = [str(k) for k in given if k not in valid]
    if not unknown:
        return
    hint = next((h for h in (did_you_mean(k, valid, n=1) for k in unknown) if h), "")  # the first key that has one
    takes = f"it takes: {', '.join(valid)}" if valid else "it takes no arguments"
    raise ConfigError(f"{what} {name!r}: unknown argument{'s' * (len(unknown) > 1)} "
                      f"{', '.join(repr(k) for k in unknown)} for kind {kind!r}{hint} ({takes})")


def instantiate(registry: Registry, spec: Any, what: str, required_method: str, base: type, wrap: Callable,
                context: dict[str, Any] | None = None) -> Any:
    """Build ``spec`` (a :class:`rmbench.core.specs.Spec`) with its kind's factory from ``registry``.

    ``context`` holds keyword arguments (such as ``runtime``) passed only to factories whose
    signature names them. The result must have ``required_method``; an object that is not a
    ``base`` instance is wrapped with ``wrap(obj, spec)``. Every failure is a ConfigError that names the
    spec, its kind and arguments; an argument the factory does not take is refused first
    (:func:`check_arguments`; ``context``'s names are not arguments a spec may give).
    """
    try:
        # a kind is a registered name, or an import target ("module:Class", "file.py:Class")
        factory: Any = import_target(spec.kind) if ":" in spec.kind else registry.get(spec.kind)
    except RegistryError as exc:
        raise ConfigError(f"{what} {spec.name!r}: {exc}") from None
    kwargs = spec.args_dict  # a fresh plain copy, lists as lists
    check_arguments(factory, kwargs, what=what, name=spec.name, kind=spec.kind, reserved=context or ())
    if context:
        try:
            # A class's own __init__ names its parameters (a __new__ taking *args, **kwargs, as
            # RewardModel's does to record them, would hide them from inspect.signature(cls)).
            params: Mapping[str, inspect.Parameter] = inspect.signature(
                factory.__init__ if inspect.isclass(factory) else factory).parameters
        except (TypeError, ValueError):
            params = {}
        kwargs.update({k: v for k, v in context.items() if k in params})
    try:
        obj = factory(**kwargs)
    except (TypeError, ValueError, RegistryError) as exc:
        raise ConfigError(f"{what} {spec.name!r} (kind {spec.kind!r}, args {spec.args_dict}): {exc}") from None
    if not callable(getattr(obj, required_method, None)):
        raise ConfigError(f"{what} kind {spec.kind!r} returned {type(obj).__name__}, "
                          f"which has no {required_method}() method")
    if not isinstance(obj, base):
        obj = wrap(obj, spec)
    return obj
