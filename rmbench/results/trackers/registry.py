"""The trackers ``--log-to`` names, and choosing them with their options (:func:`open_trackers`).

Each is a lazy ``"module:Class"`` of a :class:`~rmbench.results.trackers.sink.TrackerSink`; a
package adds one through the ``rmbench.trackers`` entry points.
"""

from __future__ import annotations

from collections.abc import Sequence

from rmbench.errors import ConfigError
from rmbench.registry import Registry
from rmbench.results.trackers.sink import TrackerSink

TRACKERS: Registry[type[TrackerSink]] = Registry("tracker", "rmbench.trackers")
TRACKERS.register("wandb", "rmbench.results.trackers.wandb_sink:WandbSink",
                  description="Weights & Biases (WANDB_MODE=offline for local files)")
TRACKERS.register("mlflow", "rmbench.results.trackers.mlflow_sink:MlflowSink",
                  description="MLflow (MLFLOW_TRACKING_URI: a server, or a file: store)")
TRACKERS.register("tensorboard", "rmbench.results.trackers.tensorboard_sink:TensorBoardSink",
                  description="TensorBoard event files (in each run folder's tensorboard/)")
TRACKERS.register("trackio", "rmbench.results.trackers.trackio_sink:TrackioSink",
                  description="trackio (a local database in TRACKIO_DIR, or a Space)")


def register_tracker(name: str, sink: type[TrackerSink] | str, *, description: str = "") -> None:
    """Register a tracker in this process (plugin API: ``rmbench.plugins.register_tracker``): a
    :class:`~rmbench.results.trackers.sink.TrackerSink` subclass, or a lazy ``"module:Class"``
    string naming one. ``--log-to {name}`` then works as a built-in one does; a name already
    registered is a :class:`~rmbench.registry.RegistryError`. An installed package registers
    through the ``rmbench.trackers`` entry-point group instead, so that every process sees it."""
    TRACKERS.register(name, sink, description=description, origin=f"register_tracker({name!r})")


def trackers_help() -> str:
    """The trackers, for ``--log-to``'s help."""
    return ", ".join(TRACKERS.names())


def tracker_names(items: Sequence[str]) -> list[str]:
    """``--log-to`` values (repeated, or comma-separated) in order, each once."""
    return list(dict.fromkeys(n.strip() for item in items for n in item.split(",") if n.strip()))


def parse_log_args(items: Sequence[str], chosen: Sequence[str], flag: str = "--log-to") -> dict[str, dict[str, str]]:
    """``NAME.KEY=VALUE`` items -> {tracker: {key: value}}; NAME must be one of ``chosen`` (given
    with ``flag``)."""
    out: dict[str, dict[str, str]] = {name: {} for name in chosen}
    for item in items:
        target, sep, value = item.partition("=")
        name, dot, key = target.strip().partition(".")
        if not sep or not dot or not name or not key:
            raise ConfigError(f"--log-arg {item!r}: expected TRACKER.KEY=VALUE (wandb.project=rm-evals)")
        if name not in out:
            raise ConfigError(f"--log-arg {item!r}: {name!r} is not a tracker this command logs to "
                              f"({flag} {','.join(chosen) or 'is not given'})")
        out[name][key] = value
    return out


def open_trackers(names: Sequence[str], args: Sequence[str] = (), flag: str = "--log-to") -> tuple[TrackerSink, ...]:
    """The sinks of ``--log-to`` (``names``) with their ``--log-arg`` options, each checked
    (:meth:`TrackerSink.check`: a missing extra is one error line with its install command).
    Called before any model is scored. ``flag``: the option that named them, as messages say it
    (``--to`` for ``rmbench log``)."""
    chosen = tracker_names(names)
    options = parse_log_args(args, chosen, flag)
    sinks = tuple(TRACKERS.get(name)(options[name], flag=flag) for name in chosen)
    for sink in sinks:
        sink.check()
    return sinks
