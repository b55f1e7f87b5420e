"""A folder written by ``rmbench train``: its ``rmbench_model.yaml`` names the kind and arguments
of the model it holds, with paths relative to the folder."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from rmbench.errors import ConfigError

MODEL_ENTRY = "rmbench_model.yaml"


def is_trained_folder(path: str | Path) -> bool:
    """Whether ``path`` is a folder holding ``rmbench_model.yaml``."""
    try:
        return (Path(path).expanduser() / MODEL_ENTRY).is_file()
    except (OSError, ValueError):  # a name no file system accepts is no folder
        return False


def load_trained_entry(folder: Path) -> dict:
    """The model entry of a trained folder, with its relative paths made absolute."""
    folder = Path(folder).expanduser()
    path = folder / MODEL_ENTRY
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError, OSError) as exc:
        raise ConfigError(f"{path}: cannot parse: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("kind"), str):
        raise ConfigError(f"{path}: expected a mapping with kind and args")
    args = dict(data.get("args", {}))
    for key in ("model", "head"):
        if isinstance(args.get(key), str) and (folder / args[key]).exists():
            args[key] = str((folder / args[key]).resolve())
    return {**data, "args": args}


def trained_split(model: str) -> dict | None:
    """What ``rmbench train`` recorded in a trained folder's ``card.json`` about its data (``data``:
    a task name or a file's absolute path; ``part``: ``train`` or ``all``), or None for a model
    that is no trained folder or a card without the record (trained before it was kept)."""
    if not is_trained_folder(model):
        return None
    card = Path(model).expanduser() / "card.json"
    try:
        split = json.loads(card.read_text(encoding="utf-8")).get("split")
    except (OSError, ValueError, AttributeError) as exc:
        raise ConfigError(f"{card}: cannot read the model card: {exc}") from None
    return split if isinstance(split, dict) and isinstance(split.get("data"), str) else None
