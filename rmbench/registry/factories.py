"""Building a spec with its kind's factory (:func:`instantiate`), and refusing, in one line and
before anything is built, the arguments the factory does not take (:func:`check_arguments`, read
from its signature: :func:`keyword_parameters`).

Part of :mod:`rmbench.registry` (whose kinds it builds), shared by every layer: it imports no layer.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from rmbench.errors import ConfigError, did_you_mean
from rmbench.registry import Registry, RegistryError, import_target


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
