"""Named tasks and models from entry files (YAML or TOML), built-in and user-supplied.

An entry file is data only::

    # tasks/ties.yaml
    name: ties
    kind: rb2_ties          # a registered task kind
    version: 1              # bump when the task's data or scoring changes
    description: RewardBench 2 Ties, built-in offline copy
    args:
      path: data/ties_builtin.jsonl   # relative paths are relative to this file

A model entry says ``type: model`` (tasks are the default)::

    type = "model"
    name = "my-rm"
    kind = "python"
    args = { target = "my_rm.py:score" }

Built-in entries live in the project's ``tasks/`` folder, shipped inside the wheel as the
package ``rmbench.builtin_tasks``; ``--include DIR`` adds the entry files of other folders.
A broken file fails loudly with its path; unknown keys are errors, not silence.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from rmbench.core.specs import ModelSpec, Spec, TaskSpec
from rmbench.errors import ConfigError, did_you_mean
from rmbench.models import MODEL_KINDS
from rmbench.models.presets import PRESETS
from rmbench.tasks import TASK_KINDS
from rmbench.tasks.downloads import is_web_source

ENTRY_SUFFIXES = (".yaml", ".yml", ".toml")
_KEYS = {"type", "name", "kind", "version", "description", "args", "group", "headline"}


def builtin_tasks_dir() -> Path:
    """The folder of built-in entries: ``tasks/`` in a checkout, ``rmbench/builtin_tasks`` in a wheel."""
    return Path(str(resources.files("rmbench.builtin_tasks")))


@dataclass
class Catalog:
    tasks: dict[str, TaskSpec] = field(default_factory=dict)
    models: dict[str, ModelSpec] = field(default_factory=dict)
    groups: dict[str, tuple[str, ...]] = field(default_factory=dict)
    descriptions: dict[tuple[str, str], str] = field(default_factory=dict)
    origins: dict[tuple[str, str], str] = field(default_factory=dict)
    headlines: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """A task entry's ``headline:``: the metrics its leaderboard columns show, instead of its kind's."""

    def expand(self, names) -> list[str]:
        """Task names with every group replaced by its members (each task once, in order)."""
        out: list[str] = []
        for name in names:
            for member in (self.expand(self.groups[name]) if name in self.groups else [name]):
                if member not in out:
                    out.append(member)
        return out

    def task_spec(self, name: str) -> TaskSpec:
        """A named task, or a registered task kind used with no arguments."""
        if name in self.tasks:
            return self.tasks[name]
        if name in TASK_KINDS:
            version = getattr(TASK_KINDS.get(name), "version", 1)
            return TaskSpec.make(name=name, kind=name, version=int(version))
        if name in self.groups:
            raise ConfigError(f"{name!r} is a group of tasks ({', '.join(self.expand(self.groups[name]))}), not one "
                              f"task: name one of them")
        choices = sorted(set(self.tasks) | set(self.groups) | set(TASK_KINDS.names()))
        hint = did_you_mean(name, choices)
        raise ConfigError(f"unknown task {name!r}{hint} (known: {', '.join(choices)})")


def _parse_file(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text) if path.suffix == ".toml" else yaml.safe_load(text)
    except (yaml.YAMLError, tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as exc:
        raise ConfigError(f"{path}: cannot parse: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping with name, kind, args; got {type(data).__name__}")
    return data


def _entry_spec(path: Path, data: dict) -> tuple[str, TaskSpec | ModelSpec, str]:
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        key = unknown[0]
        close = did_you_mean(key, _KEYS, n=1).removeprefix("; ")
        hint = f" ({close})" if close else ""
        raise ConfigError(f"{path}: field {key!r}: unknown key{hint}; allowed: {', '.join(sorted(_KEYS))}")
    if "group" in data:
        members = data["group"]
        extra = sorted(set(data) - {"name", "group", "description", "type"})
        if extra:
            raise ConfigError(f"{path}: field {extra[0]!r}: a group entry has only name, group and description")
        if not isinstance(members, list) or not members or not all(isinstance(m, str) and m for m in members):
            raise ConfigError(f"{path}: field 'group': must be a non-empty list of task names")
        if not isinstance(data.get("name"), str) or not data["name"]:
            raise ConfigError(f"{path}: field 'name': missing or not a string")
        return "group", TaskSpec.make(name=data["name"], kind="group", args={"members": members}), \
            str(data.get("description", ""))
    entry_type = data.get("type", "task")
    if entry_type not in ("task", "model"):
        raise ConfigError(f"{path}: field 'type': must be 'task' or 'model', got {entry_type!r}")
    if entry_type == "model" and "headline" in data:
        raise ConfigError(f"{path}: field 'headline': a model entry has none (a task entry's metrics)")
    for key in ("name", "kind"):
        if not isinstance(data.get(key), str) or not data[key]:
            raise ConfigError(f"{path}: field {key!r}: missing or not a string")
    version = data.get("version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise ConfigError(f"{path}: field 'version': must be a non-negative integer, got {version!r}")
    args: Any = data.get("args") or {}
    if not isinstance(args, dict):
        raise ConfigError(f"{path}: field 'args': must be a mapping")
    args = dict(args)
    def resolve(value: str) -> str:  # a web source (URL#sha256=...) stays as it is
        if is_web_source(value) or Path(value).expanduser().is_absolute():
            return value
        return str((path.parent / value).resolve())

    if isinstance(args.get("path"), str):
        args["path"] = resolve(args["path"])
    if isinstance(args.get("paths"), dict):  # e.g. shift name -> file
        args["paths"] = {k: resolve(v) if isinstance(v, str) else v for k, v in args["paths"].items()}
    target = args.get("target")
    if isinstance(target, str) and ".py:" in target:  # python:FILE.py:FUNC, relative to the entry file
        file_part, _, attr = target.rpartition(":")
        if not Path(file_part).expanduser().is_absolute():
            args["target"] = f"{(path.parent / file_part).resolve()}:{attr}"
    registry = TASK_KINDS if entry_type == "task" else MODEL_KINDS
    kind = data["kind"]
    if ":" in kind:  # an import target: "module:Class", or "file.py:Class" relative to the entry
        file_part, _, attr = kind.rpartition(":")
        if file_part.endswith(".py") and not Path(file_part).expanduser().is_absolute():
            data = {**data, "kind": f"{(path.parent / file_part).resolve()}:{attr}"}
    elif kind not in registry:
        hint = did_you_mean(data["kind"], registry.names())
        raise ConfigError(f"{path}: field 'kind': unknown {entry_type} kind {data['kind']!r}{hint}")
    if entry_type == "task":
        return entry_type, TaskSpec.make(data["name"], data["kind"], args, version), str(data.get("description", ""))
    spec = ModelSpec.make(name=data["name"], kind=data["kind"], args=args)
    return entry_type, spec, str(data.get("description", ""))


def _headline(path: Path, value: Any) -> tuple[str, ...]:
    """A task entry's ``headline:``: a non-empty list of metric names, each once (whether each is
    a declared metric is checked when the task is loaded, once its kind has declared its own)."""
    if not isinstance(value, list) or not value or not all(isinstance(m, str) and m for m in value):
        raise ConfigError(f"{path}: field 'headline': must be a non-empty list of metric names")
    if len(set(value)) != len(value):
        raise ConfigError(f"{path}: field 'headline': names a metric twice")
    return tuple(value)


def entry_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        raise ConfigError(f"{folder}: not a folder of task/model entries")
    return sorted(p for p in folder.iterdir() if p.suffix in ENTRY_SUFFIXES and p.is_file())


def load_catalog(include: Iterable[str | Path] = (), builtin: bool = True) -> Catalog:
    """All named tasks and models: built-in entries first, then each ``include`` folder."""
    catalog = Catalog()
    for name, preset in PRESETS.items():
        catalog.models[name] = preset
        catalog.descriptions[("model", name)] = PRESETS.describe(name)[0]
        catalog.origins[("model", name)] = "built-in preset"
    folders = ([builtin_tasks_dir()] if builtin else []) + [Path(p).expanduser() for p in include]
    for folder in folders:
        for path in entry_files(folder):
            data = _parse_file(path)
            entry_type, spec, description = _entry_spec(path, data)
            if entry_type == "group":
                if spec.name in catalog.groups or spec.name in catalog.tasks:
                    raise ConfigError(f"{path}: duplicate task or group name {spec.name!r}")
                catalog.groups[spec.name] = tuple(spec.args["members"])
                catalog.descriptions[("group", spec.name)] = description
                catalog.origins[("group", spec.name)] = str(path)
                continue
            table: Mapping[str, Spec] = catalog.tasks if entry_type == "task" else catalog.models
            if spec.name in table or (entry_type == "task" and spec.name in catalog.groups):
                raise ConfigError(f"{path}: duplicate {entry_type} name {spec.name!r}, "
                                  f"already defined in {catalog.origins[(entry_type, spec.name)]}")
            if isinstance(spec, TaskSpec):
                catalog.tasks[spec.name] = spec
                if "headline" in data:
                    catalog.headlines[spec.name] = _headline(path, data["headline"])
            else:
                catalog.models[spec.name] = spec
            catalog.descriptions[(entry_type, spec.name)] = description
            catalog.origins[(entry_type, spec.name)] = str(path)
    return catalog
