"""The formats of ``rmbench export RUNS --format NAME --out DIR``, in one registry, and the one
writer every format's files go through.

A format is one registration (:class:`ExportFormat`): its name, a one-line description (the
CLI's help) and a build function ``build(folders, options) -> Export``, given lazily as
``"module:function"``. The function only *builds* (the files' relative paths and texts, and a
line for each run or task it left out and why); :func:`write_export` then writes them:

* nothing is written until every file is built (a bad run leaves no half export behind);
* a file that already exists with other content is never replaced silently: the export
  stops, naming it, unless ``overwrite`` (``--force``); one with the same content is left as it is;
* each file is written atomically (:func:`rmbench.files.atomic_write_text`).

Adding a format: one module with its build function, and one registration: a line in
:data:`EXPORT_FORMATS` here, :func:`register_export_format` in one process, or an installed
package's ``rmbench.export_formats`` entry point naming its :class:`ExportFormat` (loaded as the
other plugin groups are, honouring ``RMBENCH_PLUGINS``; ``rmbench export --format`` then takes it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from rmbench.errors import ConfigError, did_you_mean
from rmbench.files import atomic_write_text, safe_file_name
from rmbench.registry import Registry, RegistryError, import_target

if TYPE_CHECKING:  # the CLI imports this module for its help text: nothing heavy at run time
    from rmbench.results.storage.folder import RunFolder
    from rmbench.tasks.loading import DataOverride


@dataclass(frozen=True)
class ExportFile:
    """One file of an export: its path relative to ``--out`` (``/``-separated) and its text."""

    path: PurePosixPath
    """Where it goes, relative to ``--out`` (``/``-separated; :func:`safe_parts` makes one of names)."""
    text: str
    """Its whole content."""


@dataclass(frozen=True)
class Export:
    """What a format built: its files, and one line per run or task it left out (and why)."""

    files: tuple[ExportFile, ...]
    """Every file of the export, written in this order."""
    skipped: tuple[str, ...] = ()
    """One line per run or task the format left out and why (``rmbench export`` prints each as a note)."""


@dataclass(frozen=True)
class ExportOptions:
    """What a format may use besides the runs. ``source_url``: where the runs can be seen (the
    Hub format's ``source.url``); ``data``: the files tasks were scored on, if moved (formats
    that write per-item files reload the tasks' data)."""

    source_url: str | None = None
    data: Mapping[str, DataOverride] = field(default_factory=dict)
    force: bool = False
    """``--force``: write what a format would refuse to (RewardBench 2's files of other data, with a note)."""
    name: str | None = None
    """``--name``: the model's Hub id (``ORG/NAME``, or ``NAME`` for ``local/NAME``), for runs of
    one model (:func:`~rmbench.results.publishing.export_names.model_id`)."""

    def one_model(self, models: int) -> None:
        """Refuse ``name`` for runs of several models (one line)."""
        if self.name is not None and models > 1:
            raise ConfigError(f"--name {self.name!r} names one model; these runs are of {models} models: export "
                              f"each model's runs with its own --name")


Build = Callable[[Sequence["RunFolder"], ExportOptions], Export]


@dataclass(frozen=True)
class ExportFormat:
    """An export format (``rmbench export --format NAME``): its name, a one-line description (the
    CLI's help) and its build function ``build(folders, options) -> Export``."""

    name: str
    """``--format NAME``; also the name it is registered under."""
    description: str
    """One line: what it writes (the CLI's help, the formats reference)."""
    target: str | Build
    """The build function, or ``"module:function"`` naming it (imported on first use)."""

    def build(self, folders: Sequence[RunFolder], options: ExportOptions) -> Export:
        """The export of ``folders`` (its build function, loaded if given by name); nothing is written."""
        fn: Build = import_target(self.target) if isinstance(self.target, str) else self.target
        return fn(folders, options)


ENTRY_POINT_GROUP = "rmbench.export_formats"
EXPORT_FORMATS: Registry[ExportFormat] = Registry("export format", entry_point_group=ENTRY_POINT_GROUP,
                                                  kind=ExportFormat, key=lambda f: f.name)
"""Every export format by name, each with its origin: the built-in ones (below), then those
registered in code or by an installed package's ``rmbench.export_formats`` entry point."""
_BUILTIN: list[str] = []


def register_export_format(name: str, fmt: ExportFormat | str, *, description: str = "") -> None:
    """Register the export format ``name`` in this process (plugin API:
    ``rmbench.plugins.register_export_format``): an :class:`ExportFormat` of that name, or a lazy
    ``"module:attr"`` naming one; a name already registered is a
    :class:`~rmbench.registry.RegistryError`. An installed package registers through the
    ``rmbench.export_formats`` entry-point group instead, so that every process sees it."""
    EXPORT_FORMATS.register(name, fmt, origin=f"register_export_format({name!r})",
                            description=description or (fmt.description if isinstance(fmt, ExportFormat) else ""))


for _fmt in (
    ExportFormat("every-eval-ever", "one Every Eval Ever EvaluationLog JSON per model",
                 "rmbench.results.publishing.export:every_eval_ever_export"),
    ExportFormat("hf-eval-results", "per model, a model repo folder of Hugging Face Hub .eval_results/*.yaml "
                 "(one file per benchmark)", "rmbench.results.publishing.hf_eval_results:hf_eval_results_export"),
    ExportFormat("rewardbench2-results", "RewardBench 2's results layout: eval-set/{org}/{model}.json and "
                 "eval-set-scores/{org}/{model}.json per model",
                 "rmbench.results.publishing.rb2_results:rb2_results_export"),
):
    EXPORT_FORMATS.register(_fmt.name, _fmt, description=_fmt.description)
    _BUILTIN.append(_fmt.name)
BUILTIN_EXPORT_FORMATS = tuple(_BUILTIN)


def export_format_names() -> tuple[str, ...]:
    """The built-in formats in their order, then the plugins' by name."""
    return (*_BUILTIN, *(n for n in EXPORT_FORMATS.names() if n not in _BUILTIN))


def export_format(name: str) -> ExportFormat:
    """The registered format ``name``; an unknown name is one line listing every format (one that
    fails to load, or is not an :class:`ExportFormat` of its name, one line naming its origin)."""
    if name not in EXPORT_FORMATS:
        names = export_format_names()
        raise ConfigError(f"unknown export format {name!r}{did_you_mean(name, names)} (known: {', '.join(names)})")
    try:
        return EXPORT_FORMATS.get(name)
    except RegistryError as exc:
        raise ConfigError(f"--format {name}: {exc}") from None


def export_formats_help() -> str:
    """The built-in formats by name, for ``--help`` (what each writes: the generated output formats
    reference), and where a plugin's come from (listing them would import the plugins' metadata)."""
    return (", ".join(_BUILTIN[:-1]) + f" or {_BUILTIN[-1]} (what each writes: docs/reference/formats.md); "
            f"or a plugin's (entry points {ENTRY_POINT_GROUP})")


def safe_parts(*parts: str) -> PurePosixPath:
    """A relative path of ``parts``, each made a safe file name (never ``..`` or absolute)."""
    return PurePosixPath(*(safe_file_name(p, "x") for p in parts))


def write_export(export: Export, out_dir: Path, overwrite: bool = False,
                 said: Callable[[Path, bool], None] | None = None) -> list[Path]:
    """Write ``export``'s files under ``out_dir``; returns their paths, in order. A file there
    with other content is refused (one ``ConfigError`` naming it, nothing written) unless
    ``overwrite``. ``said(path, written)``: per file, whether it was written (False: it already
    held this content and was left untouched)."""
    out = Path(out_dir)
    targets = [(out / Path(*f.path.parts), f) for f in export.files]
    seen: set[Path] = set()
    for path, _ in targets:
        if path in seen:  # two files of one export at one path: a format's bug, never a silent loss
            raise ConfigError(f"the export would write {path} twice")
        seen.add(path)
    changed = [path for path, f in targets if path.exists() and not _holds(path, f.text)]
    if changed and not overwrite:
        more = f" (and {len(changed) - 1} more)" if len(changed) > 1 else ""
        raise ConfigError(f"{changed[0]} exists with other content{more}; nothing was written: pass --force to "
                          f"replace, or choose another --out")
    for path, f in targets:
        write = path in changed or not path.exists()
        if write:
            atomic_write_text(path, f.text)
        if said is not None:
            said(path, write)
    return [path for path, _ in targets]


def _holds(path: Path, text: str) -> bool:
    try:
        return path.is_file() and path.read_text(encoding="utf-8") == text
    except (OSError, UnicodeDecodeError):
        return False
