"""One resolver for model names: every way to name a model goes through :class:`ModelNames`.

A model is named by

* a named entry: a preset (:mod:`rmbench.models.presets`) or a ``type: model`` entry of a
  YAML/TOML file in ``tasks/`` or an ``--include`` folder (the catalog's ``models``);
* ``KIND:TARGET``: a registered kind with a target, which fills the argument the kind names
  in its ``target_arg`` class attribute (default ``target``): ``python:my_rm.py:score``,
  ``implicit:path/or/hub-id``, ``discretize:my-avg``;
* a registered kind alone: ``oracle``, ``constant``, ``length``, a plugin's kind;
* a folder written by ``rmbench train`` (it holds ``rmbench_model.yaml``);
* an import target used as the kind: ``package.module:Class`` or ``path/to/file.py:Class``.

Nested references: a kind lists in its ``model_refs`` class attribute the arguments that name
other models (``DiscretizedRM.model_refs = ("inner",)``). Each such argument given as a
string is resolved by the same rules, so every form above works there too, and is replaced by
the mapping ``{"name", "kind", "args"}`` of what it names (its own references resolved in
turn); a mapping is checked and its references resolved. Names that lead back to themselves
are a :class:`~rmbench.errors.ConfigError` that shows the chain. (Arguments that name weights
rather than models, such as the implicit adapter's ``ref``, are not references.)

Every unknown name gets the same message: the did-you-mean hint and the known names. So does an
argument a kind does not take (:func:`check_model_args`, as each spec is resolved, nested ones
too): the kind, the did-you-mean hint and the arguments the kind's signature names.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rmbench.core.specs import ModelSpec
from rmbench.errors import ConfigError, did_you_mean
from rmbench.models.trained import MODEL_ENTRY, is_trained_folder, load_trained_entry
from rmbench.registry import RegistryError, import_target
from rmbench.registry.factories import check_arguments

if TYPE_CHECKING:
    from rmbench.registry import Registry

MAX_DEPTH = 32
"""How deeply models may name models (a guard against chains that never end)."""

MAPPING_KEYS = ("name", "kind", "args", "type", "description", "version")
"""The keys a model given as a mapping may have (``to_json`` and entry-file keys)."""

UNRESOLVED = "unresolved"
"""Key of the placeholder :func:`rmbench.models.parse_model_spec` leaves for a reference it
could not resolve: ``{"unresolved": NAME, "error": MESSAGE}``; resolving it raises MESSAGE."""

RUN_ARGS = ("runtime", "truncation")
"""Arguments a model's factory gets from the run (:func:`rmbench.models.build_model`), never from its spec."""


class UnknownModel(ConfigError):
    """A name that names no model; the message has the did-you-mean hint and the known names."""


def _unfinished_training(text: str) -> str | None:
    """Why a folder that is not a model was named, when it looks like an ``rmbench train`` output
    that never finished (no model entry yet; maybe a checkpoint), else None."""
    try:
        folder = Path(text).expanduser()
        if not folder.is_dir() or (folder / MODEL_ENTRY).exists():
            return None
        contents = sorted(p.name for p in folder.iterdir())
    except (OSError, ValueError):
        return None
    what = "is empty" if not contents else f"holds {', '.join(contents[:4])}{' ...' if len(contents) > 4 else ''}"
    return (f"model {text!r}: the folder {what}; without {MODEL_ENTRY} it is no trained model yet: an "
            f"interrupted or unfinished rmbench train writes that file last (run the same train command again: "
            f"it resumes from its checkpoint); a transformers model is named implicit:{text} or "
            f"seqcls:{text}")


def model_kinds() -> Registry:
    """The registry of model kinds (imported late: this module sits below ``rmbench.models``)."""
    from rmbench.models import MODEL_KINDS

    return MODEL_KINDS


def kind_factory(kind: str, kinds: Registry | None = None) -> Any | None:
    """The class or function a kind names, or None when it cannot be loaded (building the model
    then reports why, with the model's name)."""
    try:
        return import_target(kind) if ":" in kind else (kinds or model_kinds()).get(kind)
    except RegistryError:
        return None


def target_arg(kind: str, kinds: Registry | None = None) -> str:
    """The argument the TARGET of ``KIND:TARGET`` fills."""
    return str(getattr(kind_factory(kind, kinds), "target_arg", "target"))


def model_refs(kind: str, kinds: Registry | None = None) -> tuple[str, ...]:
    """The arguments of a kind that name other models."""
    refs = getattr(kind_factory(kind, kinds), "model_refs", ())
    return (refs,) if isinstance(refs, str) else tuple(refs)


def check_model_args(spec: ModelSpec, kinds: Registry | None = None) -> None:
    """Refuse, in one line, an argument that the spec's kind does not take (a misspelt
    ``--model-arg`` or entry key), naming the kind, a did-you-mean and the keys it takes, read
    from its factory's signature (plugins' kinds too; one taking ``**kwargs`` is not checked).
    A kind that cannot be loaded is left to building the model, which says why."""
    factory = kind_factory(spec.kind, kinds)
    if factory is not None:
        check_arguments(factory, spec.args, what="model", name=spec.name, kind=spec.kind, reserved=RUN_ARGS)


def is_import_target(text: str) -> bool:
    """Whether ``text`` is ``module:attr`` of an importable module or ``file.py:attr`` of a file.
    Checks without running the module (only its top-level package is looked up)."""
    module, sep, attr = text.rpartition(":")
    if not sep or not module or not attr:
        return False
    if module.endswith(".py") or "/" in module or "\\" in module:
        return Path(module).expanduser().is_file()
    if not all(part.isidentifier() for part in module.split(".")):
        return False
    try:
        return importlib.util.find_spec(module.split(".")[0]) is not None
    except (ImportError, ValueError):
        return False


def _is_unresolved(value: Any) -> bool:
    return isinstance(value, Mapping) and UNRESOLVED in value and "kind" not in value


def spec_mapping(spec: ModelSpec) -> dict[str, Any]:
    """The ``{"name", "kind", "args"}`` mapping that stands for a model inside another's arguments."""
    return {"name": spec.name, "kind": spec.kind, "args": spec.args_dict}


class ModelNames:
    """Resolves model names over the named specs ``named`` (the catalog's ``models``, which holds
    the presets and the YAML/``--include`` entries; the presets are always included) and the
    registered kinds ``kinds`` (default :data:`rmbench.models.MODEL_KINDS`)."""

    def __init__(self, named: Mapping[str, ModelSpec] | None = None, kinds: Registry | None = None) -> None:
        from rmbench.models.presets import presets

        self.named: dict[str, ModelSpec] = {**presets(), **dict(named or {})}
        self.kinds = kinds if kinds is not None else model_kinds()

    def known(self) -> list[str]:
        """Every name that resolves by itself: the named entries and the registered kinds."""
        return sorted(set(self.kinds.names()) | set(self.named))

    def unknown(self, text: str) -> UnknownModel:
        """The error for a name that names no model."""
        unfinished = _unfinished_training(text)
        if unfinished is not None:
            return UnknownModel(unfinished)
        kind, sep, _ = text.partition(":")
        known = self.known()
        return UnknownModel(f"unknown model {text!r}{did_you_mean(kind if sep else text, known)} "
                            f"(known: {', '.join(known)}; or KIND:TARGET such as python:my_rm.py:score, "
                            f"or a folder written by rmbench train)")

    def resolve(self, ref: Any, *, overrides: Mapping[str, Any] | None = None,
                defer_unknown: bool = False) -> ModelSpec:
        """The spec ``ref`` names, with its nested references resolved.

        ``ref``: a name (any form of the module docstring), a ``{"name", "kind", "args"}``
        mapping, or a :class:`~rmbench.core.specs.ModelSpec`. ``overrides`` replace arguments of the
        top-level spec before its references are resolved (so an override may name a model).
        ``defer_unknown``: a nested reference that names no model does not fail here; it is
        left as ``{"unresolved": NAME, "error": MESSAGE}``, which fails with MESSAGE when it
        is resolved again (when the model is built), unless an override has replaced it.
        """
        return self._resolve(ref, dict(overrides or {}), (), defer_unknown)

    def lookup(self, text: str) -> ModelSpec:
        """One name to a spec, its references left as written."""
        if not text:
            raise ConfigError("empty model name (give a model name, a kind, KIND:TARGET or a trained folder)")
        if text in self.named:
            return self.named[text]
        kind, sep, target = text.partition(":")
        if sep and kind in self.kinds:
            return ModelSpec.make(name=text, kind=kind, args={target_arg(kind, self.kinds): target})
        if text in self.kinds:
            return ModelSpec.make(name=text, kind=text)
        if is_trained_folder(text):
            entry = load_trained_entry(Path(text).expanduser())
            # Named as typed (trained/ex), as its run folder is (a file name made of the --model text).
            return ModelSpec.make(name=text, kind=entry["kind"], args=entry["args"])
        if sep and is_import_target(text):
            return ModelSpec.make(name=text, kind=text)
        raise self.unknown(text)

    def from_mapping(self, data: Mapping[str, Any]) -> ModelSpec:
        """A ``{"name", "kind", "args"}`` mapping to a spec, its references left as written."""
        if _is_unresolved(data):
            raise UnknownModel(str(data.get("error") or self.unknown(str(data[UNRESOLVED]))))
        extra = sorted(set(map(str, data)) - set(MAPPING_KEYS))
        if extra:
            raise ConfigError(f"a model given as a mapping has the keys name, kind and args; unknown key "
                              f"{extra[0]!r}{did_you_mean(extra[0], MAPPING_KEYS, n=1)}")
        kind = data.get("kind")
        if not isinstance(kind, str) or not kind:
            raise ConfigError(f"a model given as a mapping needs a kind (a string), got {data.get('kind')!r}")
        if ":" not in kind and kind not in self.kinds:
            names = self.kinds.names()
            raise UnknownModel(f"unknown model kind {kind!r}{did_you_mean(kind, names)} "
                               f"(known kinds: {', '.join(names)}; or an import target module:Class)")
        args = data.get("args") or {}
        if not isinstance(args, Mapping):
            raise ConfigError(f"model kind {kind!r}: args must be a mapping, got {type(args).__name__}")
        return ModelSpec.make(name=str(data.get("name") or kind), kind=kind, args=dict(args))

    def _resolve(self, ref: Any, overrides: dict, chain: tuple[str, ...], defer: bool) -> ModelSpec:
        if isinstance(ref, ModelSpec):
            spec = ref
        elif isinstance(ref, str):
            text = ref.strip()
            if text in chain:
                raise ConfigError(f"models name each other in a cycle: {' -> '.join(chain + (text,))}")
            if len(chain) >= MAX_DEPTH:
                raise ConfigError(f"models name models more than {MAX_DEPTH} deep: {' -> '.join(chain[:4])} -> ...")
            chain = chain + (text,)
            spec = self.lookup(text)
        elif isinstance(ref, Mapping):
            spec = self.from_mapping(ref)
        else:
            raise ConfigError(f"a model is a name (a string) or a mapping with kind and args, "
                              f"got {type(ref).__name__} {ref!r}")
        if overrides:
            spec = ModelSpec.make(spec.name, spec.kind, {**spec.args, **overrides}, spec.version)
        check_model_args(spec, self.kinds)  # before any weights load or server is called
        return self._resolve_refs(spec, chain, defer)

    def _resolve_refs(self, spec: ModelSpec, chain: tuple[str, ...], defer: bool) -> ModelSpec:
        refs = model_refs(spec.kind, self.kinds)
        if not refs:
            return spec
        args = spec.args_dict
        for key in refs:
            value = args.get(key)
            if value is None:  # not given: the kind's own default or its error
                continue
            if _is_unresolved(value):  # left by a deferring resolve; its error already names this argument
                if defer:
                    continue
                self.from_mapping(value)  # raises its error
            try:
                inner = self._resolve(value, {}, chain, defer)
            except ConfigError as exc:
                error = (UnknownModel if isinstance(exc, UnknownModel) else ConfigError)(
                    f"model {spec.name!r}, argument {key!r}: {exc}")
                if defer and isinstance(exc, UnknownModel):
                    args[key] = {UNRESOLVED: value, "error": str(error)}
                    continue
                raise error from None
            args[key] = spec_mapping(inner)
        resolved = ModelSpec.make(spec.name, spec.kind, args, spec.version)
        return spec if resolved == spec else resolved


def resolve_model(ref: Any, named: Mapping[str, ModelSpec] | None = None, *,
                  overrides: Mapping[str, Any] | None = None) -> ModelSpec:
    """The spec a model name (or mapping, or spec) stands for, nested references resolved; an
    unknown name anywhere is an :class:`UnknownModel` error. See :meth:`ModelNames.resolve`."""
    return ModelNames(named).resolve(ref, overrides=overrides)


__all__ = ["MAX_DEPTH", "RUN_ARGS", "ModelNames", "UnknownModel", "check_model_args", "is_import_target",
           "kind_factory", "model_kinds", "model_refs", "resolve_model", "spec_mapping", "target_arg"]
